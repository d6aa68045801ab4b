// The real clock (the process's steady clock) and the manual one tests move by hand.
#include "ferry/core/clock.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <thread>
#include <vector>

namespace ferry {

namespace {

// One poll(2) of at most `ms` milliseconds (negative: no limit), resumed when a signal
// interrupts it (with the full `ms` again: the callers' loops re-read their clock).
Result<int> PollOnce(pollfd* fds, int count, int ms) {
  while (true) {
    const int n = poll(fds, static_cast<nfds_t>(count), ms);
    if (n >= 0) return n;
    if (errno != EINTR) return Status::FromErrno(errno, "waiting on descriptors (poll)");
  }
}

// Milliseconds from now to `t` of the steady clock, rounded up (a wait of less than a
// millisecond must not become poll(0) calls in a loop) and clamped to what poll takes.
int MillisUntil(std::chrono::steady_clock::time_point t) {
  if (t == std::chrono::steady_clock::time_point::max()) return -1;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(t - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
}

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
    // A deadline already past only asks: a futex wait until it would sleep out the timer slack.
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    return cv.wait_until(lock, deadline, done);
  }

  Result<int> Poll(pollfd* fds, int count, time_point deadline) const override {
    while (true) {
      FERRY_ASSIGN_OR_RAISE(const int n, PollOnce(fds, count, MillisUntil(deadline)));
      if (n > 0 || Now() >= deadline) return n;
    }
  }
  void SleepUntil(time_point deadline) const override { std::this_thread::sleep_until(deadline); }
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

ManualClock::Waiters::iterator ManualClock::Enter(int wake_fd) const {
  Waiters::iterator it;
  {
    std::lock_guard guard(mutex_);
    it = waiters_.insert(waiters_.end(), Waiter{nullptr, nullptr, wake_fd});
  }
  waiters_changed_.notify_all();
  return it;
}

void ManualClock::Leave(Waiters::iterator it) const {
  {
    std::lock_guard guard(mutex_);
    waiters_.erase(it);
  }
  waiters_changed_.notify_all();
}

Result<int> ManualClock::Poll(pollfd* fds, int count, time_point deadline) const {
  // Ready at once, or the deadline passed: not counted as a wait.
  FERRY_ASSIGN_OR_RAISE(const int ready, PollOnce(fds, count, 0));
  if (ready > 0 || Now() >= deadline) return ready;
  // The caller's descriptors and an eventfd that Advance writes to. Entered before time is read
  // again: an Advance after this point wakes the poll through the eventfd (which stays readable
  // until read), and one before it is seen by the reading below.
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return Status::FromErrno(errno, "eventfd for a wait on a manual clock");
  std::vector<pollfd> all(fds, fds + count);
  all.push_back(pollfd{wake, POLLIN, 0});
  const Waiters::iterator it = Enter(wake);
  const auto backstop = std::chrono::steady_clock::now() + backstop_;
  int ready_now = 0;
  Status failed;
  while (Now() < deadline) {
    Result<int> n = PollOnce(all.data(), count + 1, MillisUntil(backstop));
    if (!n.ok()) {
      failed = n.status();
      break;
    }
    ready_now = *n;
    if (all.back().revents != 0) {  // an Advance: read the time again
      uint64_t advances = 0;
      [[maybe_unused]] const ssize_t r = read(wake, &advances, sizeof(advances));
      all.back().revents = 0;
      --ready_now;
    }
    if (ready_now > 0 || std::chrono::steady_clock::now() >= backstop) break;
  }
  Leave(it);
  close(wake);
  if (!failed.ok()) return failed;
  for (int i = 0; i < count; ++i) fds[i].revents = all[i].revents;
  return ready_now;
}

void ManualClock::SleepUntil(time_point deadline) const {
  std::mutex mutex;
  std::condition_variable never;
  std::unique_lock lock(mutex);
  WaitUntil(never, lock, deadline, [] { return false; });
}

void ManualClock::Advance(duration d) {
  std::lock_guard guard(mutex_);
  elapsed_.fetch_add(std::max(d, duration::zero()).count());
  for (const Waiter& w : waiters_) {
    if (w.wake_fd >= 0) {
      // A Poll: the eventfd stays readable until it reads it, so none is lost.
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t n = write(w.wake_fd, &one, sizeof(one));
      continue;
    }
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
