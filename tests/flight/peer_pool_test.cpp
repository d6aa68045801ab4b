// The federation's pool: tasks run on its own threads only (counted in /proc/self/task by their
// name), a full queue makes Submit wait for room until its deadline by the clock, and Stop ends
// what is queued and joins every thread.
#include "flight/peer_pool.hpp"

#include <pthread.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>

#include "support/test_util.hpp"

namespace ferry::flight::internal {
namespace {

using namespace std::chrono_literals;
using testing::ThreadIdsNamed;
using testing::ThreadsAlive;

// A gate tasks wait at until the test opens it (bounded: a test that forgets fails, not hangs).
class Gate {
 public:
  void Open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool Wait() {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, 30s, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Counts finished tasks, and lets the test wait for a number of them.
class Counter {
 public:
  void Add() {
    {
      std::lock_guard lock(mutex_);
      ++n_;
    }
    cv_.notify_all();
  }
  bool AwaitAtLeast(int n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, 30s, [&] { return n_ >= n; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int n_ = 0;
};

TEST(PeerPool, RunsEveryTaskOnItsOwnThreadsOnly) {
  // Threads that earlier tests' pools started (gRPC's) bear the name until they rename themselves.
  const std::set<int> earlier = ThreadIdsNamed("ferry-peers");
  std::set<int> ids;
  std::mutex mutex;
  std::set<std::thread::id> ran_on;
  std::set<std::string> names;
  Counter done;
  {
    PeerPool pool(3, 100, Clock::Real());
    for (int tid : ThreadIdsNamed("ferry-peers")) {
      if (earlier.count(tid) == 0) ids.insert(tid);
    }
    EXPECT_EQ(ids.size(), 3u);
    EXPECT_EQ(pool.threads(), 3u);
    EXPECT_EQ(pool.capacity(), 100u);
    for (int i = 0; i < 60; ++i) {
      ASSERT_OK(pool.Submit(
          [&](bool stopping) {
            EXPECT_FALSE(stopping);
            char name[16] = {};
            pthread_getname_np(pthread_self(), name, sizeof(name));
            {
              std::lock_guard lock(mutex);
              ran_on.insert(std::this_thread::get_id());
              names.insert(name);
            }
            done.Add();
          },
          Clock::Real()->After(10s)));
    }
    ASSERT_TRUE(done.AwaitAtLeast(60));
  }
  // Joined with the pool.
  EXPECT_EQ(ThreadsAlive(ids), std::set<int>{});
  EXPECT_LE(ran_on.size(), 3u);
  EXPECT_EQ(ran_on.count(std::this_thread::get_id()), 0u);
  EXPECT_EQ(names, std::set<std::string>{"ferry-peers"});
}

// One thread held at a gate and a queue of two: a third task waits for room until its deadline
// by the clock, and gets room as soon as a thread takes one.
TEST(PeerPool, AFullQueueMakesSubmitWaitForRoomUntilItsDeadline) {
  auto clock = std::make_shared<ManualClock>();
  Gate gate;
  Counter started;
  Counter done;
  // After what its tasks use: the pool is destroyed, and its thread joined, before them.
  PeerPool pool(1, 2, clock);
  ASSERT_OK(pool.Submit(
      [&](bool) {
        started.Add();
        EXPECT_TRUE(gate.Wait());
        done.Add();
      },
      clock->Now()));
  ASSERT_TRUE(started.AwaitAtLeast(1));
  for (int i = 0; i < 2; ++i) ASSERT_OK(pool.Submit([&](bool) { done.Add(); }, clock->Now()));
  // Full, and a deadline already reached: refused at once.
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "threads and its queue of 2 were busy",
                     pool.Submit([&](bool) { done.Add(); }, clock->Now()));
  Status late = Status::OK();
  std::thread waiting([&] { late = pool.Submit([&](bool) { done.Add(); }, clock->After(100ms)); });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));
  clock->Advance(100ms);
  waiting.join();
  EXPECT_EQ(late.code(), StatusCode::kDeadlineExceeded) << late.message();
  // Room comes when the thread takes the next task: a waiting Submit gets it, with no time
  // passing.
  Status in_time = Status::Invalid("not yet");
  std::thread queued([&] { in_time = pool.Submit([&](bool) { done.Add(); }, clock->After(1h)); });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));
  gate.Open();
  queued.join();
  EXPECT_OK(in_time);
  ASSERT_TRUE(done.AwaitAtLeast(4));
}

TEST(PeerPool, StopEndsWhatIsQueuedAndJoinsEveryThread) {
  std::atomic<int> asked{0};
  std::atomic<int> ended{0};
  Gate gate;
  Counter started;
  const std::set<int> earlier = ThreadIdsNamed("ferry-peers");
  auto pool = std::make_unique<PeerPool>(2, 10, Clock::Real());
  std::set<int> ids;
  for (int tid : ThreadIdsNamed("ferry-peers")) {
    if (earlier.count(tid) == 0) ids.insert(tid);
  }
  EXPECT_EQ(ids.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(pool->Submit(
        [&](bool) {
          started.Add();
          EXPECT_TRUE(gate.Wait());
        },
        Clock::Real()->Now()));
  }
  ASSERT_TRUE(started.AwaitAtLeast(2));
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(
        pool->Submit([&](bool stopping) { ++(stopping ? ended : asked); }, Clock::Real()->Now()));
  }
  std::thread stopper([&] { pool->Stop(); });
  gate.Open();
  stopper.join();
  // Each queued task ran once, told to end without asking anyone.
  EXPECT_EQ(asked.load() + ended.load(), 5);
  EXPECT_EQ(ThreadsAlive(ids), std::set<int>{});
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "stopping",
                     pool->Submit([&](bool) { ++asked; }, Clock::Real()->After(1s)));
  pool.reset();
}

}  // namespace
}  // namespace ferry::flight::internal
