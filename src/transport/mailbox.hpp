// A connection end's inbox: untagged messages in order, tagged messages matched by tag and mask,
// blocking receives with timeouts, and close semantics shared by every transport.
#pragma once

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

#include "ferry/transport/transport.hpp"

namespace ferry::transport::internal {

/// Messages delivered to one end. Producers push; receivers pop, waiting up to a timeout. Once
/// closed, pushes fail with EPIPE and pops drain what is queued, then fail with the close
/// reason. With a byte limit, a push waits while the queue holds more than the limit (and at
/// least one message), which is how a slow consumer holds back its transport's reader and, through
/// the socket, the sender. Thread-safe.
class Mailbox {
 public:
  explicit Mailbox(int64_t max_bytes = 0) : max_bytes_(max_bytes) {}

  [[nodiscard]] Status PushUntagged(SharedBytes message) {
    const int64_t size = message.size;
    return Push(size, [&] { untagged_.push_back(std::move(message)); });
  }

  [[nodiscard]] Status PushTagged(TaggedMessage message) {
    const int64_t size = message.payload.size;
    return Push(size, [&] { tagged_.push_back(std::move(message)); });
  }

  Result<SharedBytes> PopUntagged(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    const bool ready =
        changed_.wait_for(lock, timeout, [&] { return !untagged_.empty() || closed_; });
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
    const bool ready =
        changed_.wait_for(lock, timeout, [&] { return match() != tagged_.end() || closed_; });
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
  Status Push(int64_t size, F&& push) {
    {
      std::unique_lock lock(mutex_);
      if (max_bytes_ > 0) {
        room_.wait(lock, [&] {
          return closed_ || bytes_ <= max_bytes_ || (untagged_.empty() && tagged_.empty());
        });
      }
      if (closed_) return Status::Unavailable("the connection is closed");
      push();
      bytes_ += size;
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

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::condition_variable room_;
  std::deque<SharedBytes> untagged_;
  std::deque<TaggedMessage> tagged_;
  bool closed_ = false;
  std::string reason_;
  const int64_t max_bytes_;
  int64_t bytes_ = 0;
};

}  // namespace ferry::transport::internal
