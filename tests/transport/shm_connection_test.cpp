// The shared-memory connection's sends to a peer that takes nothing (stopped, or too slow): a
// send waits for room in the socket up to the timeout by the connection's clock, then fails the
// connection, at the deadline and not a tick before. And a spinning end (TransportLimits::spin),
// whose waiting caller reads the socket itself: a look takes what has arrived, and with no caller
// reading, its reader thread still drains the socket.
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>
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
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out waiting for an untagged message",
                     b->Receive(0ms));
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

}  // namespace
}  // namespace ferry::transport
