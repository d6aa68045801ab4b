// shm_reading.cpp's waiting caller, on a spinning shared-memory end: it reads the frame it
// waited for, and the frame behind it too only when that frame is whole already. A frame still
// on its way (a header cut short, or a payload) never keeps the caller waiting for what it did
// not ask for. Its reader thread reads on by itself past the ring's start left in its stage. The
// peer here is a bare socket written by hand, frame by frame, sharing no code with the
// transport's sends.
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <vector>

#include "support/clock_util.hpp"
#include "support/test_util.hpp"
#include "transport/shm_common.hpp"
#include "transport/shm_ring.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;

// One frame as the wire has it: a 24-byte header (kind, seven zero bytes, tag and length, both
// little-endian) and then the payload, from the header's layout in shm_frames.hpp.
std::vector<uint8_t> Frame(uint8_t kind, uint64_t tag, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f(24, 0);
  f[0] = kind;
  const uint64_t length = payload.size();
  std::memcpy(f.data() + 8, &tag, 8);
  std::memcpy(f.data() + 16, &length, 8);
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

void Write(int fd, const std::vector<uint8_t>& bytes, size_t from, size_t to) {
  ASSERT_EQ(::write(fd, bytes.data() + from, to - from), static_cast<ssize_t>(to - from));
}

// The end under test spins (so its caller reads the socket itself) and its timeouts are on a
// clock nobody moves; `raw` is the peer's bare socket.
class RawPeer {
 public:
  explicit RawPeer(std::chrono::microseconds spin = 50us) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    TransportLimits limits;
    limits.clock = clock;
    limits.timeout = 30s;
    limits.spin = spin;
    raw = fds[0];
    end = internal::shm::MakeConnection(fds[1], limits);
  }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;
  ~RawPeer() {
    end.reset();
    if (raw >= 0) ::close(raw);
  }

  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  int raw = -1;
  std::unique_ptr<Connection> end;
};

// A receive on another thread, given 10 s; a receive still waiting by then is freed by the
// peer's hang-up, so that the test fails rather than hangs.
template <typename Receive>
auto Bounded(RawPeer& p, Receive receive) {
  auto r = std::async(std::launch::async, receive);
  const bool on_time = r.wait_for(10s) == std::future_status::ready;
  if (!on_time) ::shutdown(p.raw, SHUT_RDWR);
  EXPECT_TRUE(on_time) << "the receive waited for a frame it did not ask for";
  return r.get();
}

TEST(ShmReading, AHeaderCutShortBehindTheFrameWaitedForIsLeftForLater) {
  RawPeer p;
  const std::vector<uint8_t> first = Frame(1, 0, {1, 2, 3});
  const std::vector<uint8_t> second = Frame(2, 42, {4, 5});
  std::vector<uint8_t> both = first;
  both.insert(both.end(), second.begin(), second.end());
  // The first frame and 10 of the second's 24 header bytes, in one write: one read takes both.
  Write(p.raw, both, 0, first.size() + 10);
  Result<SharedBytes> m = Bounded(p, [&] { return p.end->Receive(10s); });
  ASSERT_OK(m.status());
  ASSERT_EQ(m->size, 3);
  EXPECT_EQ(m->data[2], 3);
  // The rest comes, and the second frame is read whole, from where the first read left it.
  Write(p.raw, both, first.size() + 10, both.size());
  Result<TaggedMessage> t = Bounded(p, [&] { return p.end->ReceiveTagged(42, ~uint64_t{0}, 10s); });
  ASSERT_OK(t.status());
  ASSERT_EQ(t->payload.size, 2);
  EXPECT_EQ(t->payload.data[0], 4);
  EXPECT_EQ(t->payload.data[1], 5);
}

TEST(ShmReading, APayloadStillOnItsWayBehindTheFrameWaitedForIsLeftForLater) {
  RawPeer p;
  const std::vector<uint8_t> first = Frame(2, 7, {9});
  const std::vector<uint8_t> second = Frame(1, 0, std::vector<uint8_t>(1000, 6));
  std::vector<uint8_t> both = first;
  both.insert(both.end(), second.begin(), second.end());
  // The second's header is whole, and 100 of its 1,000 payload bytes have come.
  Write(p.raw, both, 0, first.size() + 24 + 100);
  Result<TaggedMessage> t = Bounded(p, [&] { return p.end->ReceiveTagged(7, ~uint64_t{0}, 10s); });
  ASSERT_OK(t.status());
  ASSERT_EQ(t->payload.size, 1);
  EXPECT_EQ(t->payload.data[0], 9);
  Write(p.raw, both, first.size() + 24 + 100, both.size());
  Result<SharedBytes> m = Bounded(p, [&] { return p.end->Receive(10s); });
  ASSERT_OK(m.status());
  ASSERT_EQ(m->size, 1000);
  EXPECT_EQ(m->data[999], 6);
}

// Two whole frames that come in one read are both delivered, in order, each once.
TEST(ShmReading, TwoWholeFramesInOneReadAreEachReceivedOnce) {
  RawPeer p;
  std::vector<uint8_t> both = Frame(2, 1, {1});
  const std::vector<uint8_t> second = Frame(2, 2, {2});
  both.insert(both.end(), second.begin(), second.end());
  Write(p.raw, both, 0, both.size());
  for (uint64_t tag : {1, 2}) {
    Result<TaggedMessage> t =
        Bounded(p, [&] { return p.end->ReceiveTagged(tag, ~uint64_t{0}, 10s); });
    ASSERT_OK(t.status());
    EXPECT_EQ(t->payload.data[0], tag);
  }
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out",
                     p.end->ReceiveTagged(2, ~uint64_t{0}, 0ms));
}

// A batch's metadata and its body's frame, whole in one read, are received together; a body still
// on its way is not waited for, and comes to the receive that asks for it.
TEST(ShmReading, AMessageComesWithTheWholeBodyBehindItAndWithoutOneOnItsWay) {
  RawPeer p;
  std::vector<uint8_t> pair = Frame(1, 0, {1, 2, 3});
  const std::vector<uint8_t> body = Frame(2, 5, {7, 8});
  pair.insert(pair.end(), body.begin(), body.end());
  Write(p.raw, pair, 0, pair.size());
  Result<MessageAndBody> got =
      Bounded(p, [&] { return p.end->ReceiveMessageAndBody(5, ~uint64_t{0}, 10s); });
  ASSERT_OK(got.status());
  ASSERT_EQ(got->message.size, 3);
  ASSERT_TRUE(got->body.has_value());
  EXPECT_EQ(got->body->tag, 5u);
  ASSERT_EQ(got->body->payload.size, 2);
  EXPECT_EQ(got->body->payload.data[1], 8);
  // Now the body's header comes cut short behind its metadata: the metadata comes alone.
  std::vector<uint8_t> next = Frame(1, 0, {4});
  const std::vector<uint8_t> late = Frame(2, 6, {9});
  next.insert(next.end(), late.begin(), late.end());
  const size_t cut = next.size() - late.size() + 10;
  Write(p.raw, next, 0, cut);
  got = Bounded(p, [&] { return p.end->ReceiveMessageAndBody(6, ~uint64_t{0}, 10s); });
  ASSERT_OK(got.status());
  ASSERT_EQ(got->message.size, 1);
  EXPECT_FALSE(got->body.has_value());
  Write(p.raw, next, cut, next.size());
  Result<TaggedMessage> t = Bounded(p, [&] { return p.end->ReceiveTagged(6, ~uint64_t{0}, 10s); });
  ASSERT_OK(t.status());
  EXPECT_EQ(t->payload.data[0], 9);
}

// A buffer list read by a caller that asked for it, with the next batch's metadata and list
// whole behind it: the metadata is taken with its own list, and the next receive of a message
// and its body gets both without a read. Taken alone, the metadata came without its list, whose
// receive then took the next metadata alone: a stream ahead of its caller stayed a frame off.
TEST(ShmReading, AMetadataMessageTakenBehindABufferListBringsItsOwnList) {
  RawPeer p;
  std::vector<uint8_t> all;
  for (const std::vector<uint8_t>& f : {Frame(2, 5, {50}), Frame(1, 0, {10}), Frame(2, 6, {60}),
                                        Frame(1, 0, {20}), Frame(2, 7, {70})}) {
    all.insert(all.end(), f.begin(), f.end());
  }
  // The caller leads before the frames come (it waits in the clock's poll), so that it reads
  // them, not the reader thread, which parks while a caller leads.
  auto receiving =
      std::async(std::launch::async, [&] { return p.end->ReceiveTagged(5, ~uint64_t{0}, 10s); });
  ASSERT_TRUE(p.clock->AwaitWaiters(1, 10s)) << "the receive never waited";
  Write(p.raw, all, 0, all.size());
  ASSERT_EQ(receiving.wait_for(10s), std::future_status::ready);
  Result<TaggedMessage> first = receiving.get();
  ASSERT_OK(first.status());
  EXPECT_EQ(first->payload.data[0], 50);
  // The metadata is in the inbox: this receive takes it, and its list only if it is there too.
  Result<MessageAndBody> got =
      Bounded(p, [&] { return p.end->ReceiveMessageAndBody(6, ~uint64_t{0}, 0ms); });
  ASSERT_OK(got.status());
  ASSERT_EQ(got->message.size, 1);
  EXPECT_EQ(got->message.data[0], 10);
  ASSERT_TRUE(got->body.has_value()) << "the metadata came without the list behind it";
  EXPECT_EQ(got->body->tag, 6u);
  EXPECT_EQ(got->body->payload.data[0], 60);
  // At most two frames behind the one waited for: the third pair is read by its own receive.
  got = Bounded(p, [&] { return p.end->ReceiveMessageAndBody(7, ~uint64_t{0}, 10s); });
  ASSERT_OK(got.status());
  EXPECT_EQ(got->message.data[0], 20);
  ASSERT_TRUE(got->body.has_value());
  EXPECT_EQ(got->body->payload.data[0], 70);
}

// The frame a leading caller waits for is handed to it as it is read (not through the inbox):
// only the first frame that matches its wait, and never one that does not. Frames that come
// before it, or match another wait, are there for their own receives, in their order.
TEST(ShmReading, AWaitingCallerTakesTheFirstFrameItMatchesAndLeavesTheRest) {
  RawPeer p;
  std::vector<uint8_t> all;
  for (const std::vector<uint8_t>& f : {Frame(2, 5, {50}), Frame(1, 0, {10}), Frame(2, 7, {70}),
                                        Frame(2, 7 | (1ULL << 40), {71}), Frame(1, 0, {11})}) {
    all.insert(all.end(), f.begin(), f.end());
  }
  // The caller waits before anything comes, so that it reads the frames itself as they come.
  auto waiting = std::async(std::launch::async, [&] {
    return p.end->ReceiveTagged(7, 0xFFFFFFFF, 10s);  // the low 32 bits: tag 7 either way
  });
  Write(p.raw, all, 0, all.size());
  ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
  Result<TaggedMessage> seven = waiting.get();
  ASSERT_OK(seven.status());
  EXPECT_EQ(seven->tag, 7u);
  EXPECT_EQ(seven->payload.data[0], 70);
  Result<TaggedMessage> again =
      Bounded(p, [&] { return p.end->ReceiveTagged(7, 0xFFFFFFFF, 10s); });
  ASSERT_OK(again.status());
  EXPECT_EQ(again->tag, 7 | (1ULL << 40));
  EXPECT_EQ(again->payload.data[0], 71);
  Result<TaggedMessage> five =
      Bounded(p, [&] { return p.end->ReceiveTagged(5, ~uint64_t{0}, 10s); });
  ASSERT_OK(five.status());
  EXPECT_EQ(five->payload.data[0], 50);
  for (uint8_t want : {10, 11}) {
    Result<SharedBytes> m = Bounded(p, [&] { return p.end->Receive(10s); });
    ASSERT_OK(m.status());
    ASSERT_EQ(m->size, 1);
    EXPECT_EQ(m->data[0], want);
  }
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", p.end->Receive(0ms));
}

// The ring's start among frames the reader thread read into its stage and left there, its read
// stopped at the read-ahead limit, with no caller reading: the reader thread reads them on by
// itself once its patience is spent, the ring's start among them, and then the ring, so that a
// server writing more than the ring holds is not left waiting for room. It slept on its socket
// instead, which the server no longer writes, and the server's write timed out.
// The peer here writes its socket by hand and its frames into the client's ring with FrameRing.
TEST(ShmReading, AClientReadsOnPastTheRingsStartLeftInItsStageAtTheReadAheadLimit) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const int raw = fds[0];
  // 280 untagged frames of 1,000 bytes (1,024 with the header: 64 to each 64 KiB read), past
  // the reader thread's read-ahead of 256 KiB, then the ring's start: all on the socket before
  // the client's reader thread starts, so that its reads and the frames left in its stage are
  // the same in every run (the last read holds frames 256-279 and the ring's start).
  constexpr uint32_t kSocketFrames = 280;
  std::vector<uint8_t> socket_bytes;
  for (uint32_t i = 0; i < kSocketFrames; ++i) {
    std::vector<uint8_t> payload(1000, static_cast<uint8_t>(i));
    std::memcpy(payload.data(), &i, sizeof(i));
    const std::vector<uint8_t> f = Frame(1, 0, payload);
    socket_bytes.insert(socket_bytes.end(), f.begin(), f.end());
  }
  const std::vector<uint8_t> start = Frame(7, 0, {});
  socket_bytes.insert(socket_bytes.end(), start.begin(), start.end());
  const int buffer = 1 << 20;  // the kernel holds it to twice net.core.wmem_max: 416 KiB here
  ASSERT_EQ(setsockopt(raw, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer)), 0);
  ASSERT_EQ(::send(raw, socket_bytes.data(), socket_bytes.size(), MSG_DONTWAIT),
            static_cast<ssize_t>(socket_bytes.size()))
      << "the socket's buffer did not take " << socket_bytes.size() << " bytes at once";

  TransportLimits limits;
  limits.timeout = 30s;
  Result<std::unique_ptr<Connection>> client =
      internal::shm::MakeClientConnection(fds[1], limits, "");
  ASSERT_OK(client.status());
  // The client's offer: a ring frame, its length the ring's size, and the ring's descriptor.
  uint8_t header[24];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{header, sizeof(header)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ASSERT_EQ(recvmsg(raw, &msg, MSG_CMSG_CLOEXEC), 24);
  ASSERT_EQ(header[0], 6);
  const cmsghdr* c = CMSG_FIRSTHDR(&msg);
  ASSERT_TRUE(c != nullptr && c->cmsg_type == SCM_RIGHTS);
  int ring_fd = -1;
  std::memcpy(&ring_fd, CMSG_DATA(c), sizeof(int));
  uint64_t ring_length = 0;
  std::memcpy(&ring_length, header + 16, 8);
  Result<internal::shm::FrameRing> ring = internal::shm::FrameRing::Map(ring_fd, ring_length);
  ::close(ring_fd);
  ASSERT_OK(ring.status());

  // 40 tagged frames of 10,000 bytes into the ring: 1.5 times what it holds, and nobody calls a
  // receive meanwhile.
  constexpr uint32_t kRingFrames = 40;
  const std::shared_ptr<Clock> real = Clock::Real();
  const auto doorbell = [&] {
    const uint8_t wake = 0;
    (void)::send(raw, &wake, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    return Status::OK();
  };
  for (uint32_t i = 0; i < kRingFrames; ++i) {
    std::vector<uint8_t> f = Frame(2, i, std::vector<uint8_t>(10'000, static_cast<uint8_t>(i)));
    const iovec piece{f.data(), f.size()};
    const Status st = ring->Write({&piece, 1}, *real, 10s, doorbell, [] { return false; });
    ASSERT_TRUE(st.ok()) << "frame " << i << " of the ring's (the client's reader thread left the "
                         << "ring unread): " << st.message();
  }

  for (uint32_t i = 0; i < kSocketFrames; ++i) {
    ASSERT_OK_AND_ASSIGN(SharedBytes m, (*client)->Receive(10s));
    ASSERT_EQ(m.size, 1000);
    uint32_t n = 0;
    std::memcpy(&n, m.data, sizeof(n));
    ASSERT_EQ(n, i);
  }
  for (uint32_t i = 0; i < kRingFrames; ++i) {
    ASSERT_OK_AND_ASSIGN(TaggedMessage t, (*client)->ReceiveTagged(i, ~uint64_t{0}, 10s));
    ASSERT_EQ(t.payload.size, 10'000);
    EXPECT_EQ(t.payload.data[9'999], static_cast<uint8_t>(i));
  }
  client->reset();
  ::close(raw);
}

// A peer that stops in the middle of a frame (here: 100 of a payload's 1,000 bytes) fails the
// connection once it has sent nothing for the timeout, by the end's clock and not a tick before,
// and the waiting caller learns why, whether its end spins or not. Before, that read waited for
// good, whatever the receive's own timeout.
class StoppedMidFrame : public ::testing::TestWithParam<int> {};

TEST_P(StoppedMidFrame, APeerThatStopsInAFrameFailsTheConnectionAtTheTimeout) {
  const bool spinning = GetParam() != 0;
  RawPeer p(spinning ? 50us : 0us);
  const std::vector<uint8_t> frame = Frame(1, 0, std::vector<uint8_t>(1000, 6));
  Write(p.raw, frame, 0, 24 + 100);
  // With no caller leading, the reader thread takes the frame's start by itself and waits for
  // the rest: the first wait on the clock (between frames it waits without one), and its
  // deadline runs from now. Awaited before the call, so that it is not taken for the caller's
  // wait: counted together, a caller's wait and a reader that had not yet read let the clock
  // move before the reader's deadline was set (a hang in the ASan tree of a CI run).
  ASSERT_TRUE(p.clock->AwaitWaiters(1, std::chrono::seconds(10)))
      << "the reader thread never waited for the rest of the frame";
  // The caller then waits in its inbox (a spinning one for the read token the reader holds).
  ASSERT_RAISES_WITH(StatusCode::kUnavailable,
                     "the peer sent part of a frame, then nothing for 30000 ms (stopped?)",
                     ferry::testing::AtTheDeadline(
                         *p.clock, 30s, [&] { return p.end->Receive(1h); }, 2));
}

INSTANTIATE_TEST_SUITE_P(ShmReading, StoppedMidFrame, ::testing::Values(1, 0),
                         [](const auto& c) { return c.param ? "Spinning" : "ReaderThread"; });

}  // namespace
}  // namespace ferry::transport
