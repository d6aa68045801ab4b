// A connection end's inbox: untagged messages in order, tagged messages matched by tag and mask,
// blocking receives with timeouts, and close semantics shared by every transport.
#pragma once

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

#include "ferry/dipc/transport.hpp"

namespace ferry::dipc::internal {

/// Messages delivered to one end. Producers push; receivers pop, waiting up to a timeout. Once
/// closed, pushes fail with EPIPE and pops drain what is queued, then fail with the close
/// reason. Thread-safe.
class Mailbox {
 public:
  [[nodiscard]] Status PushUntagged(ipc::SharedBytes message) {
    return Push([&] { untagged_.push_back(std::move(message)); });
  }

  [[nodiscard]] Status PushTagged(TaggedMessage message) {
    return Push([&] { tagged_.push_back(std::move(message)); });
  }

  Result<ipc::SharedBytes> PopUntagged(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    const bool ready =
        changed_.wait_for(lock, timeout, [&] { return !untagged_.empty() || closed_; });
    if (!untagged_.empty()) {
      ipc::SharedBytes m = std::move(untagged_.front());
      untagged_.pop_front();
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
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

 private:
  template <typename F>
  Status Push(F&& push) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return Status(EPIPE, "the connection is closed");
      push();
    }
    changed_.notify_all();
    return Status::OK();
  }

  Status Failure(bool ready, const char* what) const {
    if (!ready) return Status(ETIMEDOUT, std::string("timed out waiting for ") + what);
    return Status(EPIPE, reason_ + " while waiting for " + what);
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<ipc::SharedBytes> untagged_;
  std::deque<TaggedMessage> tagged_;
  bool closed_ = false;
  std::string reason_;
};

}  // namespace ferry::dipc::internal
