// A connection end's inbox: untagged messages in order, tagged messages matched by tag and mask,
// blocking receives with timeouts by the end's clock, and close semantics shared by every
// transport.
#pragma once

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "ferry/core/clock.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::transport::internal {

/// `limits` with its clock set: Clock::Real() where the caller left it NULL. Every transport end
/// keeps its limits so, and times its waits by that clock.
inline TransportLimits WithClock(TransportLimits limits) {
  if (limits.clock == nullptr) limits.clock = Clock::Real();
  return limits;
}

/// Messages delivered to one end. Producers push; receivers pop, waiting up to a timeout by the
/// mailbox's clock. Once closed, pushes fail with EPIPE and pops drain what is queued, then fail
/// with the close reason. With a byte limit, a push waits while the queue holds more than the
/// limit (and at least one message), which is how a slow consumer holds back its transport's
/// reader and, through the socket, the sender; that wait has no deadline (a pop or the close
/// ends it), but is one on the clock, so a test sees it. Thread-safe.
class Mailbox {
 public:
  /// A mailbox holding up to `max_bytes` (0: no limit), whose waits are timed by `clock` (NULL:
  /// Clock::Real()).
  explicit Mailbox(int64_t max_bytes = 0, std::shared_ptr<Clock> clock = nullptr)
      : clock_(clock != nullptr ? std::move(clock) : Clock::Real()), max_bytes_(max_bytes) {}

  /// Queue a message. Without `wake` the receivers are not woken yet (a pusher with more to push
  /// at once wakes them once, by Wake or a later push that wakes): a receiver woken for the first
  /// of two messages that travel together would find the second not there yet.
  [[nodiscard]] Status PushUntagged(SharedBytes message, bool wake = true) {
    const int64_t size = message.size;
    return Push(
        size, [&] { untagged_.push_back(std::move(message)); }, wake);
  }

  [[nodiscard]] Status PushTagged(TaggedMessage message, bool wake = true) {
    const int64_t size = message.payload.size;
    return Push(
        size, [&] { tagged_.push_back(std::move(message)); }, wake);
  }

  /// Wake the receivers for what was pushed without waking them (nothing if there is none).
  void Wake() {
    {
      std::lock_guard lock(mutex_);
      if (!unwoken_) return;
      unwoken_ = false;
    }
    changed_.notify_all();
  }

  Result<SharedBytes> PopUntagged(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    const bool ready =
        clock_->WaitFor(changed_, lock, timeout, [&] { return !untagged_.empty() || closed_; });
    if (!untagged_.empty()) {
      SharedBytes m = std::move(untagged_.front());
      untagged_.pop_front();
      Taken(m.size);
      return m;
    }
    return Failure(ready, "an untagged message");
  }

  /// The oldest tagged message whose `(tag & mask) == (want & mask)`.
  Result<TaggedMessage> PopTagged(uint64_t want, uint64_t mask, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    auto match = [&] {
      for (auto it = tagged_.begin(); it != tagged_.end(); ++it) {
        if ((it->tag & mask) == (want & mask)) return it;
      }
      return tagged_.end();
    };
    const bool ready = clock_->WaitFor(changed_, lock, timeout,
                                       [&] { return match() != tagged_.end() || closed_; });
    if (auto it = match(); it != tagged_.end()) {
      TaggedMessage m = std::move(*it);
      tagged_.erase(it);
      Taken(m.payload.size);
      return m;
    }
    return Failure(ready, "a tagged message");
  }

  /// Refuse further pushes and wake every waiter; `reason` is what pops report once drained.
  void Close(std::string reason = "the peer closed the connection") {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      closed_ = true;
      reason_ = std::move(reason);
    }
    changed_.notify_all();
    room_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

 private:
  template <typename F>
  Status Push(int64_t size, F&& push, bool wake) {
    {
      std::unique_lock lock(mutex_);
      if (max_bytes_ > 0) {
        const auto room = [&] {
          return closed_ || bytes_ <= max_bytes_ || (untagged_.empty() && tagged_.empty());
        };
        if (unwoken_ && !room()) {
          // About to wait for the receivers to take: they must know there is something.
          unwoken_ = false;
          changed_.notify_all();
        }
        // No deadline: a manual clock's backstop only ends one round of the wait.
        while (!clock_->WaitUntil(room_, lock, Clock::time_point::max(), room)) {
        }
      }
      if (closed_) return Status::Unavailable("the connection is closed");
      push();
      bytes_ += size;
      unwoken_ = !wake;
      if (!wake) return Status::OK();
    }
    changed_.notify_all();
    return Status::OK();
  }

  // Called with the lock held when a message leaves the queue.
  void Taken(int64_t size) {
    bytes_ -= size;
    if (max_bytes_ > 0) room_.notify_all();
  }

  Status Failure(bool ready, const char* what) const {
    if (!ready) return Status::DeadlineExceeded(std::string("timed out waiting for ") + what);
    return Status::Unavailable(reason_ + " while waiting for " + what);
  }

  const std::shared_ptr<Clock> clock_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::condition_variable room_;
  std::deque<SharedBytes> untagged_;
  std::deque<TaggedMessage> tagged_;
  bool closed_ = false;
  std::string reason_;
  const int64_t max_bytes_;
  int64_t bytes_ = 0;
  bool unwoken_ = false;  // pushed without waking the receivers
};

}  // namespace ferry::transport::internal
