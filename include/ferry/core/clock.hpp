// Time as ferry reads it: one Clock for ticket expiry, the dissociated-IPC sessions' timeouts,
// the transports' and clients' timeouts and the Flight federation's peer timeouts. The process's
// steady clock by default; a ManualClock that a test moves by hand, so that no test waits for
// time to pass.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

struct pollfd;  // <poll.h>

namespace ferry {

/// A source of time, and waits that end at a deadline by that time. Shared (std::shared_ptr) by
/// whatever it times: a server, its ticket book, its federation. Thread-safe. Clock::Real() is
/// the one most code gets; tests pass a ManualClock through the options structs instead.
class FERRY_EXPORT Clock {
 public:
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;

  /// The process-wide steady clock (std::chrono::steady_clock), made once and never NULL.
  /// Reading it costs one steady_clock::now(); its waits are the condition variable's own.
  static std::shared_ptr<Clock> Real();

  /// Now, by this clock.
  virtual time_point Now() const = 0;
  /// `t` of this clock as wall time, for deadlines shown to people and other processes (a
  /// ticket's expiration_time).
  virtual std::chrono::system_clock::time_point ToSystem(time_point t) const = 0;
  /// Wait on `cv`, with `lock` held on the mutex that those who change what `done` reads hold
  /// while they notify, until `done()` is true (true) or this clock reaches `deadline` (false,
  /// unless `done()` then holds). `done` is called with `lock` held; its last answer is the
  /// result. As with any wait, `lock` may be released while waiting.
  virtual bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         time_point deadline, const std::function<bool()>& done) const = 0;
  /// Wait until one of the `count` descriptors of `fds` (as poll(2) takes them) is ready, or this
  /// clock reaches `deadline`: how many are ready (their revents set), or 0 at the deadline (or
  /// the error poll gave). An interrupted poll is resumed; readiness at the deadline still counts.
  virtual Result<int> Poll(pollfd* fds, int count, time_point deadline) const = 0;
  /// Wait until this clock reaches `deadline`, with nothing that ends the wait sooner: a pause
  /// between two tries. The real clock sleeps (nanosleep).
  virtual void SleepUntil(time_point deadline) const = 0;

  /// Now plus `d`, saturated at the latest time a time_point holds (a timeout "forever" stays
  /// one).
  template <typename Rep, typename Period>
  time_point After(std::chrono::duration<Rep, Period> d) const {
    if (d >= std::chrono::duration_cast<std::chrono::duration<Rep, Period>>(duration::max())) {
      return time_point::max();
    }
    const duration ahead = std::chrono::duration_cast<duration>(d);
    const time_point now = Now();
    if (ahead > duration::zero() && now.time_since_epoch() > duration::max() - ahead) {
      return time_point::max();
    }
    return now + ahead;
  }
  /// WaitUntil(cv, lock, After(limit), done); a limit of zero or less only asks `done` (a look
  /// that never sleeps: a wait until "now" would sleep out the kernel's timer slack, 50 us).
  template <typename Rep, typename Period>
  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               std::chrono::duration<Rep, Period> limit, const std::function<bool()>& done) const {
    if (limit <= limit.zero()) return done();
    return WaitUntil(cv, lock, After(limit), done);
  }
};

/// A clock that moves only when told (Advance), for tests: expiry and timeouts are seen the
/// moment the test moves time past them, with no wall-clock time spent. Advance wakes every
/// wait in progress under its own mutex (a Poll through an eventfd of its own), so none misses
/// it. So that a test that forgets to move it fails rather than hangs, each wait on it also ends
/// after `backstop` of real time. Costs a list node per wait in progress, and an eventfd per Poll.
class FERRY_EXPORT ManualClock final : public Clock {
 public:
  /// Starts at `start`, which ToSystem maps to the wall time of construction.
  explicit ManualClock(time_point start = std::chrono::steady_clock::now(),
                       std::chrono::milliseconds backstop = std::chrono::seconds(60));

  time_point Now() const override;
  std::chrono::system_clock::time_point ToSystem(time_point t) const override;
  bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 time_point deadline, const std::function<bool()>& done) const override;
  Result<int> Poll(pollfd* fds, int count, time_point deadline) const override;
  void SleepUntil(time_point deadline) const override;

  /// Move time forward by `d` (a negative `d` moves nothing: steady time never goes back) and
  /// wake every wait in progress. Call it holding no mutex that a waiter on this clock waits with.
  void Advance(duration d);
  /// How many waits on this clock are in progress: those whose predicate was false when they
  /// began (one that need not wait is never counted).
  int waiters() const;
  /// Wait, at most `limit` of real time, until at least `n` waits on this clock are in
  /// progress: how a test knows that a server has reached the wait it means to end. True if
  /// they are.
  bool AwaitWaiters(int n, std::chrono::milliseconds limit) const;

 private:
  // A WaitUntil (its mutex and condition variable), or a Poll (the eventfd Advance writes to).
  struct Waiter {
    std::mutex* mutex = nullptr;
    std::condition_variable* cv = nullptr;
    int wake_fd = -1;
  };
  using Waiters = std::list<Waiter>;
  Waiters::iterator Enter(std::condition_variable& cv, std::unique_lock<std::mutex>& lock) const;
  void Leave(Waiters::iterator it, std::unique_lock<std::mutex>& lock) const;
  Waiters::iterator Enter(int wake_fd) const;
  void Leave(Waiters::iterator it) const;

  const time_point start_;
  const std::chrono::system_clock::time_point system_start_;
  const std::chrono::milliseconds backstop_;
  std::atomic<int64_t> elapsed_{0};  // since start_, in duration's ticks
  // Held while waits enter and leave, and through all of Advance's notifications: a wait that
  // has left is never notified, so its mutex and condition variable may go.
  mutable std::mutex mutex_;
  mutable std::condition_variable waiters_changed_;
  mutable Waiters waiters_;
};

}  // namespace ferry
