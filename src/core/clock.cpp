// The real clock (the process's steady clock) and the manual one tests move by hand.
#include "ferry/core/clock.hpp"

#include <algorithm>

namespace ferry {

namespace {

class RealClock final : public Clock {
 public:
  time_point Now() const override { return std::chrono::steady_clock::now(); }

  std::chrono::system_clock::time_point ToSystem(time_point t) const override {
    return std::chrono::system_clock::now() +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(
               t - std::chrono::steady_clock::now());
  }

  bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 time_point deadline, const std::function<bool()>& done) const override {
    return cv.wait_until(lock, deadline, done);
  }
};

}  // namespace

std::shared_ptr<Clock> Clock::Real() {
  static const std::shared_ptr<Clock> real = std::make_shared<RealClock>();
  return real;
}

ManualClock::ManualClock(time_point start, std::chrono::milliseconds backstop)
    : start_(start), system_start_(std::chrono::system_clock::now()), backstop_(backstop) {}

Clock::time_point ManualClock::Now() const { return start_ + duration(elapsed_.load()); }

std::chrono::system_clock::time_point ManualClock::ToSystem(time_point t) const {
  return system_start_ +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(t - start_);
}

// The caller's mutex is released while the clock's is taken, here and in Leave: Advance takes
// the clock's mutex first and then each waiter's, so no thread may hold them the other way round.
ManualClock::Waiters::iterator ManualClock::Enter(std::condition_variable& cv,
                                                  std::unique_lock<std::mutex>& lock) const {
  lock.unlock();
  Waiters::iterator it;
  {
    std::lock_guard guard(mutex_);
    it = waiters_.insert(waiters_.end(), Waiter{lock.mutex(), &cv});
  }
  waiters_changed_.notify_all();
  lock.lock();
  return it;
}

void ManualClock::Leave(Waiters::iterator it, std::unique_lock<std::mutex>& lock) const {
  lock.unlock();
  {
    std::lock_guard guard(mutex_);
    waiters_.erase(it);
  }
  waiters_changed_.notify_all();
  lock.lock();
}

bool ManualClock::WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                            time_point deadline, const std::function<bool()>& done) const {
  // A wait that need not wait is not counted as one (AwaitWaiters sees only real waits).
  if (done()) return true;
  if (Now() >= deadline) return false;
  // Entered before time is read again: an Advance after this point notifies this wait under its
  // mutex, and one before it is seen by the reading below.
  const Waiters::iterator it = Enter(cv, lock);
  const auto backstop = std::chrono::steady_clock::now() + backstop_;
  bool result = false;
  for (;;) {
    if (done()) {
      result = true;
      break;
    }
    if (Now() >= deadline) break;
    if (cv.wait_until(lock, backstop) == std::cv_status::timeout) {
      result = done();
      break;
    }
  }
  Leave(it, lock);
  return result;
}

void ManualClock::Advance(duration d) {
  std::lock_guard guard(mutex_);
  elapsed_.fetch_add(std::max(d, duration::zero()).count());
  for (const Waiter& w : waiters_) {
    // Under the waiter's mutex: it is either before its reading of the time (and sees the new
    // one) or asleep on its condition variable (and is woken).
    std::lock_guard waiter(*w.mutex);
    w.cv->notify_all();
  }
}

int ManualClock::waiters() const {
  std::lock_guard guard(mutex_);
  return static_cast<int>(waiters_.size());
}

bool ManualClock::AwaitWaiters(int n, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mutex_);
  return waiters_changed_.wait_for(lock, limit,
                                   [&] { return static_cast<int>(waiters_.size()) >= n; });
}

}  // namespace ferry
