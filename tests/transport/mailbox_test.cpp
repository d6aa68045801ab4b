// The mailbox every transport delivers into: order, tag matching, close, the byte limit that
// holds a transport's reader back while its consumer is slow, and pops that time out by the
// mailbox's clock. A ManualClock times each box, so a test sees a waiting push or pop as a wait
// on it, and a timeout by moving it.
#include "transport/mailbox.hpp"

#include <time.h>

#include <atomic>
#include <thread>

#include "support/clock_util.hpp"
#include "support/counted_new.hpp"
#include "support/test_util.hpp"

namespace ferry::transport::internal {
namespace {

using namespace std::chrono_literals;
using ferry::testing::AtTheDeadline;

SharedBytes Bytes(int64_t n) {
  auto owner = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n), uint8_t{7});
  return SharedBytes{owner->data(), n, owner};
}

TEST(Mailbox, APushPastTheLimitWaitsForAPop) {
  auto clock = std::make_shared<ManualClock>();
  Mailbox box(100, clock);
  ASSERT_OK(box.PushUntagged(Bytes(60)));
  ASSERT_OK(box.PushUntagged(Bytes(60)));  // 60 <= 100 when it was pushed: it goes in
  std::atomic<bool> pushed{false};
  std::thread late([&] {
    EXPECT_OK(box.PushTagged(TaggedMessage{5, Bytes(10)}));  // 120 > 100: waits
    pushed = true;
  });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));  // the push waits
  clock->Advance(1h);                        // and time ends no such wait
  EXPECT_FALSE(pushed.load());
  ASSERT_OK_AND_ASSIGN(SharedBytes first, box.PopUntagged(1s));
  EXPECT_EQ(first.size, 60);
  late.join();  // 60 left: the waiting push went in
  EXPECT_TRUE(pushed.load());
  ASSERT_OK_AND_ASSIGN(TaggedMessage m, box.PopTagged(5, ~uint64_t{0}, 1s));
  EXPECT_EQ(m.payload.size, 10);
}

TEST(Mailbox, AMessageLargerThanTheLimitStillGoesIntoAnEmptyBox) {
  Mailbox box(100);
  ASSERT_OK(box.PushTagged(TaggedMessage{1, Bytes(1000)}));
  ASSERT_OK_AND_ASSIGN(TaggedMessage m, box.PopTagged(1, ~uint64_t{0}, 1s));
  EXPECT_EQ(m.payload.size, 1000);
}

TEST(Mailbox, CloseWakesAWaitingPushWithEpipe) {
  auto clock = std::make_shared<ManualClock>();
  Mailbox box(10, clock);
  ASSERT_OK(box.PushUntagged(Bytes(20)));
  std::thread late(
      [&] { ASSERT_RAISES_WITH(StatusCode::kUnavailable, "closed", box.PushUntagged(Bytes(1))); });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));
  box.Close("gone");
  late.join();
  // What was queued still drains, then the close reason.
  ASSERT_OK(box.PopUntagged(0ms).status());
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "gone while waiting for an untagged message",
                     box.PopUntagged(0ms));
}

TEST(Mailbox, WithoutALimitPushesNeverWait) {
  Mailbox box;
  for (int i = 0; i < 100; ++i) ASSERT_OK(box.PushUntagged(Bytes(1 << 16)));
  for (int i = 0; i < 100; ++i) ASSERT_OK(box.PopUntagged(0ms).status());
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", box.PopUntagged(0ms));
}

// A pop waits until its deadline by the box's clock, not a tick less; a message or the close
// ends it sooner.
TEST(Mailbox, APopTimesOutAtItsDeadline) {
  auto clock = std::make_shared<ManualClock>();
  Mailbox box(0, clock);
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out waiting for an untagged message",
                     AtTheDeadline(*clock, 30s, [&] { return box.PopUntagged(30s).status(); }));
  ASSERT_RAISES_WITH(
      StatusCode::kDeadlineExceeded, "timed out waiting for a tagged message",
      AtTheDeadline(*clock, 5ms, [&] { return box.PopTagged(1, ~uint64_t{0}, 5ms).status(); }));
  std::thread pusher([&] {
    EXPECT_TRUE(clock->AwaitWaiters(1, 10s));
    EXPECT_OK(box.PushTagged(TaggedMessage{1, Bytes(3)}));
  });
  ASSERT_OK_AND_ASSIGN(TaggedMessage m, box.PopTagged(1, ~uint64_t{0}, 1h));
  EXPECT_EQ(m.payload.size, 3);
  pusher.join();
}

// CPU time of the calling thread: what a spin costs, unlike a wait.
std::chrono::nanoseconds ThreadCpu() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

// A pop with a spin watches the box for that long (by the steady clock: a spin is CPU time, not
// a wait on the box's clock), then sleeps on the clock like any pop; a look (no time to wait)
// does not spin at all.
TEST(Mailbox, APopSpinsForItsSpinThenSleeps) {
  auto clock = std::make_shared<ManualClock>();
  Mailbox box(0, clock, 5ms);
  const auto look = ThreadCpu();
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", box.PopUntagged(0ms));
  EXPECT_LT(ThreadCpu() - look, 4ms) << "a look spun";
  std::atomic<int64_t> started{0};
  std::thread popper([&] {
    started = std::chrono::steady_clock::now().time_since_epoch().count();
    EXPECT_OK(box.PopUntagged(1h).status());
  });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));  // the spin ended: the pop sleeps on the clock
  const auto slept_at = std::chrono::steady_clock::now().time_since_epoch().count();
  EXPECT_GE(std::chrono::nanoseconds(slept_at - started.load()), 5ms)
      << "the pop slept before its spin was spent";
  ASSERT_OK(box.PushUntagged(Bytes(1)));
  popper.join();
}

// A spinning pop sees a message that was pushed without waking anyone: it watches the box, not
// the wake-ups.
TEST(Mailbox, ASpinningPopTakesAMessagePushedWithoutAWake) {
  auto clock = std::make_shared<ManualClock>();
  Mailbox box(0, clock, std::chrono::microseconds(std::chrono::hours(1)));
  std::atomic<bool> popped{false};
  std::thread popper([&] {
    EXPECT_OK(box.PopTagged(3, ~uint64_t{0}, 1h).status());
    popped = true;
  });
  ASSERT_OK(box.PushTagged(TaggedMessage{2, Bytes(1)}, /*wake=*/false));  // not the one
  ASSERT_OK(box.PushTagged(TaggedMessage{3, Bytes(1)}, /*wake=*/false));
  popper.join();  // it never slept: its spin (an hour) would outlast any test
  EXPECT_TRUE(popped.load());
  EXPECT_EQ(clock->waiters(), 0);
}

// HoldsTagged looks for one exact tag (a UCX client asks it before it posts a receive for a body
// its read-ahead may have taken already): the whole tag, not the sequence number alone.
// A pop given the count of pokes it read before it waits is ended by a later Poke, with
// nothing and before its timeout: a receiver whose messages another thread was fetching takes
// over. A pop given no count, or one that waits on, is not ended by it, and a count already
// stale ends the wait at once. The clock never moves, so only the poke can end these waits.
TEST(Mailbox, APokeEndsTheWaitsOfThePopsThatReadAnOlderCount) {
  auto clock = std::make_shared<ManualClock>();
  Mailbox box(0, clock);
  const uint64_t before = box.pokes();
  std::atomic<int> ended{0};
  std::thread poked([&] {
    ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out",
                       box.PopTagged(1, ~uint64_t{0}, 1h, before));
    ++ended;
  });
  std::thread unpoked([&] {
    ASSERT_OK_AND_ASSIGN(SharedBytes m, box.PopUntagged(1h));  // ended by the push below only
    EXPECT_EQ(m.size, 3);
    ++ended;
  });
  ASSERT_TRUE(clock->AwaitWaiters(2, 10s));
  box.Poke();
  poked.join();
  EXPECT_EQ(ended.load(), 1);
  EXPECT_EQ(box.pokes(), before + 1);
  EXPECT_EQ(clock->waiters(), 1);  // the pop given no count waits on
  // A stale count: the pop does not wait at all.
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", box.PopUntagged(1h, before));
  ASSERT_OK(box.PushUntagged(Bytes(3)));
  unpoked.join();
  // A poked pop still takes a message that is there.
  ASSERT_OK(box.PushTagged(TaggedMessage{1, Bytes(2)}));
  ASSERT_OK_AND_ASSIGN(TaggedMessage t, box.PopTagged(1, ~uint64_t{0}, 1h, before));
  EXPECT_EQ(t.payload.size, 2);
}

TEST(Mailbox, HoldsTaggedLooksForTheExactTag) {
  Mailbox box;
  const uint64_t packed = 5;
  const uint64_t list = (uint64_t{1} << 32) | 5;
  EXPECT_FALSE(box.HoldsTagged(packed));
  ASSERT_OK(box.PushTagged(TaggedMessage{list, Bytes(1)}));
  EXPECT_FALSE(box.HoldsTagged(packed));
  EXPECT_TRUE(box.HoldsTagged(list));
  ASSERT_OK(box.PushTagged(TaggedMessage{packed, Bytes(2)}));
  EXPECT_TRUE(box.HoldsTagged(packed));
  ASSERT_OK_AND_ASSIGN(TaggedMessage m, box.PopTagged(packed, ~uint64_t{0}, 0ms));
  EXPECT_EQ(m.payload.size, 2);
  EXPECT_FALSE(box.HoldsTagged(packed));
  EXPECT_TRUE(box.HoldsTagged(list));
}

// Messages pushed together keep their order, each to its own queue, and count toward the limit.
TEST(Mailbox, PushAllQueuesEachInItsOrder) {
  Mailbox box(1000);
  std::vector<Mailbox::Pushed> batch;
  batch.push_back({true, TaggedMessage{0, Bytes(1)}});
  batch.push_back({false, TaggedMessage{9, Bytes(2)}});
  batch.push_back({true, TaggedMessage{0, Bytes(3)}});
  batch.push_back({false, TaggedMessage{9, Bytes(4)}});
  ASSERT_OK(box.PushAll(&batch, true));
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(box.held_bytes(), 10);
  for (int64_t size : {1, 3}) {
    ASSERT_OK_AND_ASSIGN(SharedBytes m, box.PopUntagged(0ms));
    EXPECT_EQ(m.size, size);
  }
  for (int64_t size : {2, 4}) {
    ASSERT_OK_AND_ASSIGN(TaggedMessage m, box.PopTagged(9, ~uint64_t{0}, 0ms));
    EXPECT_EQ(m.payload.size, size);
  }
  EXPECT_EQ(box.held_bytes(), 0);
  box.Close("gone");
  batch.push_back({true, TaggedMessage{0, Bytes(1)}});
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "closed", box.PushAll(&batch, true));
}

// A batch's metadata and its body's list, queued together, come out together; a body not queued
// yet, or one another tag matches, stays where it is, and an empty box times out as a pop does.
TEST(Mailbox, PopMessageAndBodyTakesTheMatchingBodyWithItsMessage) {
  Mailbox box;
  ASSERT_OK(box.PushTagged(TaggedMessage{8, Bytes(5)}));
  ASSERT_OK(box.PushUntagged(Bytes(1)));
  ASSERT_OK(box.PushTagged(TaggedMessage{7, Bytes(3)}));
  ASSERT_OK(box.PushUntagged(Bytes(2)));
  ASSERT_OK_AND_ASSIGN(MessageAndBody first, box.PopMessageAndBody(7, ~uint64_t{0}, 0ms));
  EXPECT_EQ(first.message.size, 1);
  ASSERT_TRUE(first.body.has_value());
  EXPECT_EQ(first.body->tag, 7u);
  EXPECT_EQ(first.body->payload.size, 3);
  EXPECT_EQ(box.held_bytes(), 7);
  ASSERT_OK_AND_ASSIGN(MessageAndBody second, box.PopMessageAndBody(9, ~uint64_t{0}, 0ms));
  EXPECT_EQ(second.message.size, 2);
  EXPECT_FALSE(second.body.has_value());
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out",
                     box.PopMessageAndBody(8, ~uint64_t{0}, 0ms));
  ASSERT_OK_AND_ASSIGN(TaggedMessage left, box.PopTagged(8, ~uint64_t{0}, 0ms));
  EXPECT_EQ(left.payload.size, 5);
  EXPECT_EQ(box.held_bytes(), 0);
}

// A reader ahead of its receivers waits until they have taken it down to the bound: a pop that
// leaves more does not end the wait, the one that brings it there does.
TEST(Mailbox, WaitBelowEndsWhenThePopsBringTheBoxDownToIt) {
  auto clock = std::make_shared<ManualClock>();
  Mailbox box(0, clock);
  EXPECT_TRUE(box.WaitBelow(100, 1s, *clock));  // empty: no wait
  for (int i = 0; i < 3; ++i) ASSERT_OK(box.PushUntagged(Bytes(60)));
  std::atomic<int> came{-1};
  std::thread reader([&] { came = box.WaitBelow(60, 1s, *clock) ? 1 : 0; });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));
  ASSERT_OK(box.PopUntagged(0ms).status());  // 120 left: still waiting
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));
  EXPECT_EQ(came.load(), -1);
  ASSERT_OK(box.PopUntagged(0ms).status());  // 60
  reader.join();
  EXPECT_EQ(came.load(), 1);
}

// Receivers that take too little for the patience (by the clock given) end the wait with false:
// the reader then reads on for them. The close ends it too.
TEST(Mailbox, WaitBelowGivesUpAfterItsPatience) {
  auto clock = std::make_shared<ManualClock>();
  Mailbox box(0, clock);
  ASSERT_OK(box.PushUntagged(Bytes(200)));
  std::atomic<int> came{-1};
  std::thread reader([&] { came = box.WaitBelow(100, 50ms, *clock) ? 1 : 0; });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));
  clock->Advance(49ms);
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));
  EXPECT_EQ(came.load(), -1);
  clock->Advance(1ms);
  reader.join();
  EXPECT_EQ(came.load(), 0);
  std::thread closed([&] { came = box.WaitBelow(100, 1h, *clock) ? 1 : 0; });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));
  box.Close("gone");
  closed.join();
  EXPECT_EQ(came.load(), 1);
}

#if FERRY_COUNT_ALLOCATIONS
// A pop allocates nothing, so neither does a client's wait on its inbox: each pop hands its
// predicate to the clock as a std::function, which must fit in the function's own room. A poked
// pop with a count already stale goes through the same call and returns at once.
TEST(Mailbox, APopAllocatesNothing) {
  Mailbox box;
  const uint64_t pokes = box.pokes();
  box.Poke();
  const int64_t before = ferry::testing::allocations;
  Result<TaggedMessage> tagged = box.PopTagged(1, ~uint64_t{0}, 10s, pokes);
  Result<SharedBytes> untagged = box.PopUntagged(10s, pokes);
  const int64_t counted = ferry::testing::allocations - before;
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", tagged);
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", untagged);
  EXPECT_EQ(counted, 0);
}
#endif

}  // namespace
}  // namespace ferry::transport::internal
