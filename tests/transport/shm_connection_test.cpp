// The shared-memory connection's sends to a peer that takes nothing (stopped, or too slow): a
// send waits for room in the socket up to the timeout by the connection's clock, then fails the
// connection, at the deadline and not a tick before. And a spinning end (TransportLimits::spin),
// whose waiting caller reads the socket itself: a look takes what has arrived, and with no caller
// reading, its reader thread still drains the socket. And a client's frame ring (shm_ring.hpp)
// on a live connection: see below.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "support/clock_util.hpp"
#include "support/test_util.hpp"
#include "transport/shm_common.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;
using ferry::testing::AtTheDeadline;

TEST(ShmConnection, ASendToAPeerThatTakesNothingFailsAtTheTimeout) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  auto clock = std::make_shared<ManualClock>();
  TransportLimits limits;
  limits.timeout = 30s;
  limits.clock = clock;
  // fds[1] is the peer: nothing reads it, so the socket fills.
  std::unique_ptr<Connection> sender = internal::shm::MakeConnection(fds[0], limits);
  const std::vector<uint8_t> body(8 << 20, 7);
  const ByteSpan piece{body.data(), static_cast<int64_t>(body.size())};
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "the peer took nothing for 30000 ms",
                     AtTheDeadline(*clock, 30s, [&] {
                       return sender->SendTagged(1, {&piece, 1});
                     }));
  // The connection failed: what follows says why.
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "closed", sender->SendTagged(2, {&piece, 1}));
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "the peer took nothing for 30000 ms",
                     sender->Receive(0ms));
  sender.reset();
  close(fds[1]);
}

// Two ends over a socketpair, timed by `clock`, the receiving one (second) spinning.
std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> SpinningPair(
    const std::shared_ptr<Clock>& clock) {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  TransportLimits limits;
  limits.clock = clock;
  std::unique_ptr<Connection> a = internal::shm::MakeConnection(fds[0], limits);
  limits.spin = 50us;
  return {std::move(a), internal::shm::MakeConnection(fds[1], limits)};
}

// A receive with no time to wait reads what is already in the socket: a spinning end has no
// thread reading ahead of its caller, so a look that only looked at the queue would never find
// a message while the caller keeps looking.
TEST(ShmConnection, ASpinningEndsLookReadsWhatHasArrived) {
  auto clock = std::make_shared<ManualClock>();
  auto [a, b] = SpinningPair(clock);
  // Looks, one after another with no wait between: one that finds the reader thread mid-read
  // does not wait for it, and the next finds what it queued. Each look is a read by the caller,
  // so the reader thread stands back throughout (it reads only once no caller has for 10 ms):
  // looks that never read the socket would find nothing however many there were.
  const auto look = [](auto receive) {
    auto r = receive();
    for (int k = 0; k < 100000 && !r.ok(); ++k) r = receive();
    return r;
  };
  for (uint8_t i = 0; i < 50; ++i) {
    const ByteSpan piece{&i, 1};
    ASSERT_OK(a->Send({&piece, 1}));
    ASSERT_OK(a->SendTagged(100 + i, {&piece, 1}));
    // A Unix socket's send has landed in the peer's socket when it returns.
    ASSERT_OK_AND_ASSIGN(SharedBytes m, look([&, &b = b] { return b->Receive(0ms); }));
    ASSERT_EQ(m.size, 1);
    EXPECT_EQ(m.data[0], i);
    ASSERT_OK_AND_ASSIGN(TaggedMessage t, look([&, &b = b] {
                           return b->ReceiveTagged(100 + i, ~uint64_t{0}, 0ms);
                         }));
    EXPECT_EQ(t.payload.data[0], i);
  }
  EXPECT_EQ(clock->waiters(), 0);  // nothing waited
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", b->Receive(0ms));
}

// With no caller receiving, the reader thread reads the socket, so a peer sending far more than
// the socket holds is not held up until its timeout; the messages wait in the inbox.
TEST(ShmConnection, ASpinningEndWithNoCallerReadingStillDrainsItsSocket) {
  auto clock = std::make_shared<ManualClock>();
  auto [a, b] = SpinningPair(clock);
  const std::vector<uint8_t> body(2 << 20, 9);
  const ByteSpan piece{body.data(), static_cast<int64_t>(body.size())};
  auto sent = std::async(std::launch::async, [&, &a = a] {
    for (uint64_t i = 0; i < 8; ++i) {
      Status st = a->SendTagged(i, {&piece, 1});
      if (!st.ok()) return st;
    }
    return Status::OK();
  });
  // 16 MiB against a socket of a few hundred KiB: only a reader lets the sends finish. The clock
  // does not move, so a sender that waited for room would wait for good.
  ASSERT_EQ(sent.wait_for(60s), std::future_status::ready) << "the sends never finished";
  ASSERT_OK(sent.get());
  for (uint64_t i = 0; i < 8; ++i) {
    // The last may still be on its way from the socket to the inbox: a receive that may wait.
    ASSERT_OK_AND_ASSIGN(TaggedMessage t, b->ReceiveTagged(i, ~uint64_t{0}, 10s));
    ASSERT_EQ(t.payload.size, piece.size);
    EXPECT_EQ(t.payload.data[t.payload.size - 1], 9);
  }
}

// A spinning end's caller, asleep in its receive, wakes for the message, and for the peer's
// close, without another thread and without the clock moving.
TEST(ShmConnection, ASpinningEndWakesForAMessageAndForTheClose) {
  auto clock = std::make_shared<ManualClock>();
  auto [a, b] = SpinningPair(clock);
  std::thread sender([&, &a = a] {
    EXPECT_TRUE(clock->AwaitWaiters(1, 10s));  // the receive sleeps (its spin is spent)
    const uint8_t one = 1;
    const ByteSpan piece{&one, 1};
    EXPECT_OK(a->SendTagged(7, {&piece, 1}));
    EXPECT_TRUE(clock->AwaitWaiters(1, 10s));
    a->Close();
  });
  ASSERT_OK_AND_ASSIGN(TaggedMessage t, b->ReceiveTagged(7, ~uint64_t{0}, 1h));
  EXPECT_EQ(t.payload.data[0], 1);
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "the peer closed the connection", b->Receive(1h));
  sender.join();
}

// The frame ring on a live connection: once the server has taken the ring,
// every frame it sends comes through it (the ring's own counter says how many bytes), in order
// with the regions it shares, larger than the ring too; a client reads what its server wrote
// before it went, then learns that it went, and a server that its client went; and a spinning
// client asleep wakes for a frame in its ring and for the close.

// The client's frame ring as this process maps it (the first "memfd:ferry-ring" in
// /proc/self/maps): its producer's counter of bytes written, at byte 64 (shm_ring.cpp).
uint64_t RingBytesWritten() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("memfd:ferry-ring") == std::string::npos) continue;
    const auto* base = reinterpret_cast<const uint8_t*>(std::stoull(line, nullptr, 16));
    return std::atomic_ref(*const_cast<uint64_t*>(reinterpret_cast<const uint64_t*>(base + 64)))
        .load();
  }
  return 0;
}

// A server's end and a client's end (which offers its ring) over a socketpair. The client says
// "hi" and the server receives it: the server took the ring first, so what it sends from here
// goes through the ring.
struct RingEnds {
  std::unique_ptr<Connection> server, client;
};

// The connections' reader threads started since `before` (by name: a sanitizer's runtime may
// start threads of its own meanwhile).
std::vector<int> StartedSince(const std::map<int, std::string>& before) {
  std::vector<int> started;
  for (const auto& [tid, name] : testing::ThreadNames()) {
    if (before.count(tid) == 0 && name == "ferry-shm-read") started.push_back(tid);
  }
  return started;
}

// `server_threads` and `client_threads`, where given, get the reader thread each end started.
RingEnds RingPair(const std::shared_ptr<Clock>& clock, std::chrono::microseconds client_spin,
                  std::vector<int>* server_threads = nullptr,
                  std::vector<int>* client_threads = nullptr) {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  TransportLimits limits;
  limits.clock = clock;
  limits.timeout = 10s;
  RingEnds p;
  const std::map<int, std::string> at_start = testing::ThreadNames();
  p.server = internal::shm::MakeConnection(fds[0], limits);
  const std::map<int, std::string> before_client = testing::ThreadNames();
  if (server_threads != nullptr) *server_threads = StartedSince(at_start);
  limits.spin = client_spin;
  Result<std::unique_ptr<Connection>> client =
      internal::shm::MakeClientConnection(fds[1], limits, "");
  if (client_threads != nullptr) *client_threads = StartedSince(before_client);
  EXPECT_TRUE(client.ok()) << client.status().message();
  p.client = std::move(*client);
  const ByteSpan hi{reinterpret_cast<const uint8_t*>("hi"), 2};
  EXPECT_OK(p.client->Send({&hi, 1}));
  Result<SharedBytes> got = p.server->Receive(10s);
  EXPECT_TRUE(got.ok() && got->size == 2);
  return p;
}

class RingConnection : public ::testing::TestWithParam<int> {
 protected:
  std::chrono::microseconds spin() const { return std::chrono::microseconds(GetParam()); }
};

TEST_P(RingConnection, EveryFrameOfTheServerComesThroughTheRingInOrder) {
  RingEnds p = RingPair(Clock::Real(), spin());
  const uint64_t before = RingBytesWritten();
  // 200 metadata messages of 100 bytes, each with a tagged message of 1,000; then one tagged
  // message of 1 MiB, four times the ring.
  std::vector<uint8_t> small(100), body(1000), big(1 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  auto sent = std::async(std::launch::async, [&] {
    for (uint32_t i = 0; i < 200; ++i) {
      std::memcpy(small.data(), &i, sizeof(i));
      const ByteSpan m{small.data(), 100}, b{body.data(), 1000};
      Status st = p.server->SendMessageAndBody({&m, 1}, 1000 + i, {&b, 1});
      if (!st.ok()) return st;
    }
    const ByteSpan b{big.data(), static_cast<int64_t>(big.size())};
    return p.server->SendTagged(7, {&b, 1});
  });
  for (uint32_t i = 0; i < 200; ++i) {
    ASSERT_OK_AND_ASSIGN(SharedBytes m, p.client->Receive(10s));
    ASSERT_EQ(m.size, 100);
    uint32_t n = 0;
    std::memcpy(&n, m.data, sizeof(n));
    ASSERT_EQ(n, i);
    ASSERT_OK_AND_ASSIGN(TaggedMessage t, p.client->ReceiveTagged(1000 + i, ~uint64_t{0}, 10s));
    ASSERT_EQ(t.payload.size, 1000);
  }
  ASSERT_OK_AND_ASSIGN(TaggedMessage t, p.client->ReceiveTagged(7, ~uint64_t{0}, 10s));
  ASSERT_EQ(t.payload.size, static_cast<int64_t>(big.size()));
  EXPECT_EQ(std::memcmp(t.payload.data, big.data(), big.size()), 0);
  ASSERT_OK(sent.get());
  // Each frame is a 24-byte header and its payload: all of them went through the ring.
  EXPECT_EQ(RingBytesWritten() - before, 200 * (24 + 100 + 24 + 1000) + 24 + (1 << 20));
}

TEST_P(RingConnection, AClientReadsWhatItsServerWroteBeforeItWentThenLearnsItWent) {
  RingEnds p = RingPair(Clock::Real(), spin());
  for (uint8_t i = 0; i < 3; ++i) {
    const ByteSpan m{&i, 1};
    ASSERT_OK(p.server->Send({&m, 1}));
  }
  p.server.reset();
  for (uint8_t i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(SharedBytes m, p.client->Receive(10s));
    EXPECT_EQ(m.data[0], i);
  }
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "the peer closed the connection",
                     p.client->Receive(10s));
}

// A ring with room takes a write whoever reads it: the server learns from its socket that the
// client went, and its sends then fail as they would on the socket.
TEST_P(RingConnection, AServerWhoseClientWentSendsNothingMore) {
  RingEnds p = RingPair(Clock::Real(), spin());
  p.client.reset();
  const uint8_t one = 1;
  const ByteSpan piece{&one, 1};
  ASSERT_TRUE(testing::Within(10s, [&] {
    return !p.server->Send({&piece, 1}).ok();
  })) << "the server went on writing to a ring nobody reads";
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "closed", p.server->Send({&piece, 1}));
}

INSTANTIATE_TEST_SUITE_P(Spin, RingConnection, ::testing::Values(0, 50),
                         [](const auto& p) { return p.param ? "Spinning" : "Blocking"; });

// The client's receive sleeps (its spin spent) and the clock does not move: only the server's
// wake-up on the socket, sent because the client said it sleeps, brings the frame in. A caller
// that began to lead while the reader thread still read (after the pair's greeting) is poked
// once the reader hands back the token: left waiting on its inbox, it slept with the frame in
// its ring until the manual clock's backstop (here 20 s; the test then fails).
TEST(RingConnection, ASleepingSpinningClientWakesForAFrameInItsRingAndForTheClose) {
  auto clock = std::make_shared<ManualClock>(std::chrono::steady_clock::now(), 20s);
  const auto started = std::chrono::steady_clock::now();
  RingEnds p = RingPair(clock, 50us);
  std::thread sender([&] {
    EXPECT_TRUE(clock->AwaitWaiters(1, 10s));
    const uint8_t one = 1;
    const ByteSpan piece{&one, 1};
    EXPECT_OK(p.server->SendTagged(7, {&piece, 1}));
    EXPECT_TRUE(clock->AwaitWaiters(1, 10s));
    p.server->Close();
  });
  ASSERT_OK_AND_ASSIGN(TaggedMessage t, p.client->ReceiveTagged(7, ~uint64_t{0}, 1h));
  EXPECT_EQ(t.payload.data[0], 1);
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "the peer closed the connection",
                     p.client->Receive(1h));
  sender.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s) << "a wait ran to the backstop";
}

// The voluntary context switches so far of the threads `tids` (/proc/self/task/*/status): each
// is one sleep of the thread.
int64_t VoluntarySwitches(const std::vector<int>& tids) {
  constexpr std::string_view kKey = "voluntary_ctxt_switches:";
  int64_t total = 0;
  for (const int tid : tids) {
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(kKey, 0) == 0) total += std::stoll(line.substr(kKey.size()));
    }
  }
  return total;
}

// What each end's reader thread did while a fresh pair moved a paced stream: its voluntary
// switches (sleeps), from /proc, and how long the stream took.
struct PacedStream {
  int64_t client_sleeps = 0;
  int64_t server_sleeps = 0;
  std::chrono::steady_clock::duration took{};
};

// `frames` frames, each sent once the client (spinning `spin` first) sleeps on its ManualClock.
PacedStream ReaderSleepsOverAPacedStream(int frames, std::chrono::microseconds spin) {
  auto clock = std::make_shared<ManualClock>();
  std::vector<int> server_reader;  // each end's own thread: its reader thread
  std::vector<int> reader;
  RingEnds p = RingPair(clock, spin, &server_reader, &reader);
  EXPECT_EQ(server_reader.size(), 1u);
  EXPECT_EQ(reader.size(), 1u);
  const int64_t switched = VoluntarySwitches(reader);
  const int64_t server_switched = VoluntarySwitches(server_reader);
  const auto started = std::chrono::steady_clock::now();
  std::mutex mutex;
  std::condition_variable taken;
  int received = 0;
  bool failed = false;  // the client's receive failed: the sender stops
  std::thread sender([&] {
    for (int i = 0; i < frames; ++i) {
      {
        std::unique_lock lock(mutex);
        taken.wait(lock, [&] { return received == i || failed; });
        if (failed) return;
      }
      EXPECT_TRUE(clock->AwaitWaiters(1, 10s));  // the client sleeps
      const auto b = static_cast<uint8_t>(i);
      const ByteSpan piece{&b, 1};
      EXPECT_OK(p.server->SendTagged(static_cast<uint64_t>(i), {&piece, 1}));
    }
  });
  for (int i = 0; i < frames; ++i) {
    Result<TaggedMessage> t = p.client->ReceiveTagged(static_cast<uint64_t>(i), ~uint64_t{0}, 1h);
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (t.ok()) {
      EXPECT_EQ(t->payload.data[0], static_cast<uint8_t>(i));
    }
    std::lock_guard lock(mutex);
    failed = !t.ok();
    ++received;
    taken.notify_all();
    if (failed) break;
  }
  sender.join();
  return {VoluntarySwitches(reader) - switched, VoluntarySwitches(server_reader) - server_switched,
          std::chrono::steady_clock::now() - started};
}

// A client's caller reads its frame ring itself while it waits, spinning or not: the server's
// wake-up brings the frame straight to it, and its reader thread stands back, looking every
// 10 ms (kParked) whether a caller still reads. A reader thread that was already watching the
// socket when the caller began is taken out of its poll: left there, it slept beside the caller,
// and each frame's wake-up woke both, though only the caller took the frame (in a few streams in
// a hundred it never got out, and slept once a frame: 200 here). And the server's reader thread
// is not woken by the client's reads.
TEST(RingConnection, AClientIsWokenByItsServerNotByItsReaderThread) {
  constexpr int kFrames = 200;
  for (const auto spin : {0us, 50us}) {
    for (int pair = 0; pair < 8; ++pair) {
      const PacedStream s = ReaderSleepsOverAPacedStream(kFrames, spin);
      // A look every 10 ms, and a few at the start and the end (a slower build's stream takes
      // longer, and looks more).
      const int64_t looks = 4 + s.took / 10ms;
      EXPECT_LE(s.client_sleeps, looks)
          << "spin " << spin.count() << " us, stream " << pair << ": "
          << std::chrono::duration<double, std::milli>(s.took).count() << " ms";
      // The server's reader thread, with nothing to read, sleeps throughout: it waits in poll for
      // input, which its client's reads of the wake-up bytes do not wake (a wait in recvmsg, on
      // the socket's one wait queue, woke for each of them: 201 here).
      EXPECT_LE(s.server_sleeps, looks) << "spin " << spin.count() << " us, stream " << pair;
    }
  }
}

// A region shared once the ring is in use: its descriptor goes over the socket, its frame
// through the ring, and the client maps it before the message after it.
TEST(RingConnection, ARegionSharedThroughTheRingIsMappedInOrder) {
  ASSERT_OK_AND_ASSIGN(auto listener, Listen("shm", ""));
  ConnectOptions options;
  options.limits.timeout = 10s;
  ASSERT_OK_AND_ASSIGN(auto client, Connect("shm", listener->address(), options));
  ASSERT_OK_AND_ASSIGN(auto server, listener->Accept(10s));
  const ByteSpan hi{reinterpret_cast<const uint8_t*>("hi"), 2};
  ASSERT_OK(client->Send({&hi, 1}));
  ASSERT_OK(server->Receive(10s).status());
  const uint64_t before = RingBytesWritten();
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Region> region, listener->CreateRegion(1 << 16));
  std::memset(region->data(), 0x5a, 1 << 16);
  ASSERT_OK(server->ShareRegion(region));
  ASSERT_OK(server->Send({&hi, 1}));
  ASSERT_OK(client->Receive(10s).status());
  const BufferRef ref{region->WireAddress(100), 1000};
  FetchedBody body;
  ASSERT_OK(client->Fetch({&ref, 1}, 10s, &body));
  ASSERT_EQ(body.buffers.size(), 1u);
  EXPECT_EQ(body.bytes.data[body.buffers[0].address], 0x5a);
  EXPECT_EQ(RingBytesWritten() - before, 24 + 24 + 2);  // the region's frame and the message
}

// The VmFlags of the mapping that holds `p`, from /proc/self/smaps (the kernel's own account), or
// "" if none holds it.
std::string VmFlagsOf(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0;
    uintptr_t hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// A shared segment of 2 MiB or more asks for huge pages on both sides (MADV_HUGEPAGE: the kernel
// marks the mapping "hg"), so that where transparent_hugepage/shmem_enabled allows them, the
// server's pages are 2 MiB and the client maps each at once; a smaller one does not.
TEST(ShmRegion, ASegmentOf2MiBOrMoreAsksForHugePagesOnBothSides) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages (CONFIG_TRANSPARENT_HUGEPAGE)";
  }
  ASSERT_OK_AND_ASSIGN(auto listener, Listen("shm", ""));
  ConnectOptions options;
  options.limits.timeout = 10s;
  ASSERT_OK_AND_ASSIGN(auto client, Connect("shm", listener->address(), options));
  ASSERT_OK_AND_ASSIGN(auto server, listener->Accept(10s));
  for (const int64_t size : {int64_t{4} << 20, int64_t{2} << 20, int64_t{1} << 16}) {
    SCOPED_TRACE(size);
    const bool huge = size >= (int64_t{2} << 20);
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Region> region, listener->CreateRegion(size));
    std::memset(region->data(), 0x6b, static_cast<size_t>(size));
    const std::string server_flags = VmFlagsOf(region->data());
    ASSERT_FALSE(server_flags.empty());
    EXPECT_EQ(server_flags.find(" hg") != std::string::npos, huge) << server_flags;
    ASSERT_OK(server->ShareRegion(region));
    const ByteSpan hi{reinterpret_cast<const uint8_t*>("hi"), 2};
    ASSERT_OK(server->Send({&hi, 1}));
    ASSERT_OK(client->Receive(10s).status());
    const BufferRef ref{region->WireAddress(size - 100), 100};
    FetchedBody body;
    ASSERT_OK(client->Fetch({&ref, 1}, 10s, &body));
    ASSERT_EQ(body.buffers.size(), 1u);
    const uint8_t* mapped = body.bytes.data + body.buffers[0].address;
    EXPECT_EQ(*mapped, 0x6b);
    const std::string client_flags = VmFlagsOf(mapped);
    ASSERT_FALSE(client_flags.empty());
    EXPECT_NE(mapped, region->data() + size - 100) << "the client reads its own mapping";
    EXPECT_EQ(client_flags.find(" hg") != std::string::npos, huge) << client_flags;
  }
}

}  // namespace
}  // namespace ferry::transport
