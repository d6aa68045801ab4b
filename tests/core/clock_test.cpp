// Clock: the real one reads the steady clock and waits as a condition variable (or poll) does;
// the manual one moves only when told, wakes every wait it passes the deadline of, and misses
// none.
#include "ferry/core/clock.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <future>
#include <thread>
#include <vector>

namespace ferry {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// A wait on `clock` in a thread of its own, until `deadline` or `flag`: what it returned, and
// the clock's time when it did.
class Waiting {
 public:
  Waiting(const Clock& clock, Clock::time_point deadline) : clock_(clock) {
    thread_ = std::thread([this, deadline] {
      std::unique_lock lock(mutex_);
      result_ = clock_.WaitUntil(cv_, lock, deadline, [this] { return flag_; });
      returned_at_ = clock_.Now();
    });
  }
  ~Waiting() {
    if (thread_.joinable()) thread_.join();
  }
  void Set() {
    {
      std::lock_guard lock(mutex_);
      flag_ = true;
    }
    cv_.notify_all();
  }
  // Joins the thread: the wait's result.
  bool Join() {
    thread_.join();
    return result_;
  }
  Clock::time_point returned_at() const { return returned_at_; }

 private:
  const Clock& clock_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool flag_ = false;
  bool result_ = false;
  Clock::time_point returned_at_{};
  std::thread thread_;
};

TEST(Clock, TheRealOneIsTheSteadyClock) {
  const std::shared_ptr<Clock> real = Clock::Real();
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(real, Clock::Real());
  const Steady::time_point before = Steady::now();
  const Clock::time_point now = real->Now();
  EXPECT_LE(before, now);
  EXPECT_LE(now, Steady::now());
  // An hour ahead is an hour ahead of the wall clock too (give or take the calls between).
  const auto wall = real->ToSystem(now + 1h) - std::chrono::system_clock::now();
  EXPECT_GT(wall, 1h - 1s);
  EXPECT_LE(wall, 1h);
  EXPECT_EQ(real->After(std::chrono::milliseconds::max()), Clock::time_point::max());
  EXPECT_EQ(real->After(std::chrono::hours::max()), Clock::time_point::max());
}

TEST(Clock, ARealWaitEndsWhenDoneOrAtAPassedDeadline) {
  const std::shared_ptr<Clock> real = Clock::Real();
  std::mutex mutex;
  std::condition_variable cv;
  std::unique_lock lock(mutex);
  int calls = 0;
  // A deadline already passed: no wait, and the answer is the predicate's.
  EXPECT_FALSE(real->WaitUntil(cv, lock, real->Now() - 1s, [&] { return ++calls > 100; }));
  EXPECT_TRUE(real->WaitUntil(cv, lock, real->Now() - 1s, [] { return true; }));
  lock.unlock();
  // Woken by its notifier, long before a deadline an hour away.
  Waiting waiting(*real, real->After(1h));
  waiting.Set();
  EXPECT_TRUE(waiting.Join());
  EXPECT_LT(waiting.returned_at(), real->Now() + 1s);
}

TEST(ManualClock, MovesOnlyWhenAdvanced) {
  const Clock::time_point start = Steady::now() - 10h;
  const auto wall_before = std::chrono::system_clock::now();
  ManualClock clock(start);
  const auto wall_after = std::chrono::system_clock::now();
  EXPECT_EQ(clock.Now(), start);
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(1500ms);
  EXPECT_EQ(clock.Now(), start + 1500ms);
  clock.Advance(-1h);
  EXPECT_EQ(clock.Now(), start + 1500ms);
  // The start is the wall time of construction; later times are as far after it.
  EXPECT_GE(clock.ToSystem(start), wall_before);
  EXPECT_LE(clock.ToSystem(start), wall_after);
  EXPECT_EQ(clock.ToSystem(start + 90s) - clock.ToSystem(start), 90s);
  EXPECT_EQ(clock.After(250ms), start + 1750ms);
  EXPECT_EQ(clock.After(std::chrono::milliseconds::max()), Clock::time_point::max());
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(ManualClock, AWaitEndsWhenTimeReachesItsDeadlineAndNotBefore) {
  ManualClock clock;
  const Clock::time_point deadline = clock.Now() + 100ms;
  Waiting waiting(clock, deadline);
  ASSERT_TRUE(clock.AwaitWaiters(1, 10s));
  clock.Advance(99ms);
  // Still waiting: the wait that was woken went back to sleep (it is still counted).
  EXPECT_EQ(clock.waiters(), 1);
  clock.Advance(1ms);
  EXPECT_FALSE(waiting.Join());
  EXPECT_EQ(waiting.returned_at(), deadline);
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(ManualClock, AWaitEndsWhenDoneWithoutTimeMoving) {
  ManualClock clock;
  const Clock::time_point start = clock.Now();
  Waiting waiting(clock, clock.Now() + 1h);
  ASSERT_TRUE(clock.AwaitWaiters(1, 10s));
  waiting.Set();
  EXPECT_TRUE(waiting.Join());
  EXPECT_EQ(waiting.returned_at(), start);
}

// Waits with mutexes and condition variables of their own: an Advance ends exactly those whose
// deadline it reaches.
TEST(ManualClock, AnAdvanceEndsTheWaitsItPassesTheDeadlineOf) {
  ManualClock clock;
  const Clock::time_point start = clock.Now();
  Waiting first(clock, start + 10ms);
  Waiting second(clock, start + 20ms);
  Waiting third(clock, start + 30ms);
  ASSERT_TRUE(clock.AwaitWaiters(3, 10s));
  clock.Advance(15ms);
  EXPECT_FALSE(first.Join());
  EXPECT_EQ(first.returned_at(), start + 15ms);
  EXPECT_EQ(clock.waiters(), 2);
  clock.Advance(15ms);
  EXPECT_FALSE(second.Join());
  EXPECT_FALSE(third.Join());
  EXPECT_EQ(second.returned_at(), start + 30ms);
  EXPECT_EQ(third.returned_at(), start + 30ms);
}

// An Advance racing the start of a wait is never lost: each wait ends at once, not at its
// backstop (an hour of real time here; the test's own time bounds it far below that).
TEST(ManualClock, NoAdvanceIsLostToAWaitThatIsStarting) {
  ManualClock clock(Steady::now(), std::chrono::hours(1));
  const auto real_start = Steady::now();
  for (int i = 0; i < 300; ++i) {
    Waiting waiting(clock, clock.Now() + 1ms);
    clock.Advance(1ms);
    EXPECT_FALSE(waiting.Join());
  }
  EXPECT_LT(Steady::now() - real_start, 60s);
  EXPECT_EQ(clock.waiters(), 0);
}

// A wait nobody ends stops at its backstop of real time; with none, at once, answering what the
// predicate says.
TEST(ManualClock, AForgottenWaitEndsAtItsBackstop) {
  ManualClock clock(Steady::now(), 0ms);
  std::mutex mutex;
  std::condition_variable cv;
  std::unique_lock lock(mutex);
  EXPECT_FALSE(clock.WaitFor(cv, lock, 1h, [] { return false; }));
  int calls = 0;
  EXPECT_TRUE(clock.WaitFor(cv, lock, 1h, [&] { return ++calls == 2; }));
  EXPECT_TRUE(lock.owns_lock());
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(ManualClock, AwaitWaitersIsBoundedAndCountsEveryWait) {
  ManualClock clock;
  EXPECT_FALSE(clock.AwaitWaiters(1, 0ms));
  std::vector<std::unique_ptr<Waiting>> waits;
  for (int i = 0; i < 4; ++i) waits.push_back(std::make_unique<Waiting>(clock, clock.Now() + 1s));
  ASSERT_TRUE(clock.AwaitWaiters(4, 10s));
  EXPECT_EQ(clock.waiters(), 4);
  clock.Advance(1s);
  for (auto& w : waits) EXPECT_FALSE(w->Join());
  EXPECT_EQ(clock.waiters(), 0);
}

// A pipe whose read end a Poll waits on; closed with the test.
class Pipe {
 public:
  Pipe() { EXPECT_EQ(pipe(fds_), 0); }
  ~Pipe() {
    close(fds_[0]);
    close(fds_[1]);
  }
  void Write() const { EXPECT_EQ(write(fds_[1], "x", 1), 1); }
  pollfd ReadEnd() const { return pollfd{fds_[0], POLLIN, 0}; }

 private:
  int fds_[2] = {-1, -1};
};

TEST(Clock, ARealPollEndsWhenReadyOrAtAPassedDeadline) {
  const std::shared_ptr<Clock> real = Clock::Real();
  Pipe pipe;
  pollfd p = pipe.ReadEnd();
  ASSERT_TRUE(real->Poll(&p, 1, real->Now() - 1s).ok());
  EXPECT_EQ(*real->Poll(&p, 1, real->Now() - 1s), 0);
  pipe.Write();
  // Readiness at a passed deadline still counts.
  EXPECT_EQ(*real->Poll(&p, 1, real->Now() - 1s), 1);
  EXPECT_NE(p.revents & POLLIN, 0);
  EXPECT_EQ(*real->Poll(&p, 1, real->After(1h)), 1);
}

// A Poll on a manual clock ends at its deadline by that clock (and not a tick before), or when a
// descriptor is ready, with no time moving.
TEST(ManualClock, APollEndsAtItsDeadlineOrWhenReady) {
  ManualClock clock;
  Pipe pipe;
  const Clock::time_point deadline = clock.Now() + 100ms;
  auto poll = [&] {
    pollfd p = pipe.ReadEnd();
    Result<int> n = clock.Poll(&p, 1, deadline);
    return n.ok() ? *n : -1;
  };
  auto timed_out = std::async(std::launch::async, poll);
  ASSERT_TRUE(clock.AwaitWaiters(1, 10s));
  clock.Advance(100ms - Clock::duration(1));
  EXPECT_EQ(clock.waiters(), 1);
  EXPECT_EQ(timed_out.wait_for(0s), std::future_status::timeout);
  clock.Advance(Clock::duration(1));
  EXPECT_EQ(timed_out.get(), 0);
  EXPECT_EQ(clock.waiters(), 0);

  auto ready = std::async(std::launch::async, [&] {
    pollfd p = pipe.ReadEnd();
    Result<int> n = clock.Poll(&p, 1, clock.Now() + 1h);
    return n.ok() && (p.revents & POLLIN) != 0 ? *n : -1;
  });
  ASSERT_TRUE(clock.AwaitWaiters(1, 10s));
  pipe.Write();
  EXPECT_EQ(ready.get(), 1);
  EXPECT_EQ(clock.Now(), deadline);
}

// An Advance racing the start of a Poll is never lost (the backstop is an hour).
TEST(ManualClock, NoAdvanceIsLostToAPollThatIsStarting) {
  ManualClock clock(Steady::now(), std::chrono::hours(1));
  Pipe pipe;
  const auto real_start = Steady::now();
  for (int i = 0; i < 300; ++i) {
    const Clock::time_point deadline = clock.Now() + 1ms;
    auto polled = std::async(std::launch::async, [&] {
      pollfd p = pipe.ReadEnd();
      return clock.Poll(&p, 1, deadline).ok();
    });
    clock.Advance(1ms);
    EXPECT_TRUE(polled.get());
  }
  EXPECT_LT(Steady::now() - real_start, 60s);
  EXPECT_EQ(clock.waiters(), 0);
}

// A sleep ends when the clock reaches its deadline: the real one's after that much real time, a
// manual one's when it is moved there, and not a tick before.
TEST(Clock, ASleepEndsAtItsDeadline) {
  const std::shared_ptr<Clock> real = Clock::Real();
  const Clock::time_point deadline = real->After(5ms);
  real->SleepUntil(deadline);
  EXPECT_GE(real->Now(), deadline);

  ManualClock clock;
  const Clock::time_point until = clock.Now() + 1h;
  auto sleeping = std::async(std::launch::async, [&] { clock.SleepUntil(until); });
  ASSERT_TRUE(clock.AwaitWaiters(1, 10s));
  clock.Advance(1h - Clock::duration(1));
  EXPECT_EQ(sleeping.wait_for(0s), std::future_status::timeout);
  clock.Advance(Clock::duration(1));
  EXPECT_EQ(sleeping.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(ManualClock, AForgottenPollEndsAtItsBackstop) {
  ManualClock clock(Steady::now(), 0ms);
  Pipe pipe;
  pollfd p = pipe.ReadEnd();
  EXPECT_EQ(*clock.Poll(&p, 1, clock.Now() + 1h), 0);
  EXPECT_EQ(clock.waiters(), 0);
}

}  // namespace
}  // namespace ferry
