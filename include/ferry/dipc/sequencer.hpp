// Putting dissociated-IPC messages back in sequence order: metadata and bodies may arrive in any
// order, and the client holds at most a bounded number of early ones.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "ferry/core/result.hpp"

namespace ferry::dipc {

/// Holds items that arrived ahead of their turn and releases them in sequence order, starting at
/// `first` and wrapping at UINT32_MAX. At most `window` items are held: an item further ahead,
/// a duplicate, or one already delivered is an error naming its sequence number. Not
/// thread-safe; move-only when T is.
template <typename T>
class Sequencer {
 public:
  explicit Sequencer(uint32_t window, uint32_t first = 0) : window_(window), next_(first) {}

  /// Accept `item` with sequence number `sequence`.
  Status Put(uint32_t sequence, T item) {
    // Distance ahead of the next expected number, in wrapping arithmetic.
    const uint32_t ahead = sequence - next_;
    if (ahead >= window_) {
      // Either delivered already (it wrapped to a huge distance) or too far ahead.
      if (ahead > UINT32_MAX / 2) {
        return Status::Invalid("sequence number " + std::to_string(sequence) +
                               " was already delivered (expecting " + std::to_string(next_) + ")");
      }
      return Status::Invalid("sequence number " + std::to_string(sequence) + " is " +
                             std::to_string(ahead) + " ahead of " + std::to_string(next_) +
                             ", beyond the window of " + std::to_string(window_));
    }
    if (ahead == 0) {
      // The usual case, an item in its turn, waits outside the map: no allocation.
      if (due_ || held_.count(sequence) > 0) return Twice(sequence);
      due_.emplace(std::move(item));
      return Status::OK();
    }
    if (!held_.emplace(sequence, std::move(item)).second) return Twice(sequence);
    return Status::OK();
  }

  /// The next item in order, if it has arrived.
  std::optional<T> Pop() {
    if (due_) {
      std::optional<T> item = std::move(due_);
      due_.reset();
      ++next_;
      return item;
    }
    auto it = held_.find(next_);
    if (it == held_.end()) return std::nullopt;
    T item = std::move(it->second);
    held_.erase(it);
    ++next_;  // wraps at UINT32_MAX; keys are absolute numbers, so none needs rekeying
    return item;
  }

  uint32_t next() const noexcept { return next_; }
  size_t held() const noexcept { return held_.size() + (due_ ? 1 : 0); }

 private:
  static Status Twice(uint32_t sequence) {
    return Status::Invalid("sequence number " + std::to_string(sequence) + " arrived twice");
  }

  uint32_t window_;
  uint32_t next_;
  std::optional<T> due_;  // number next_, when it came in its turn
  std::map<uint32_t, T> held_;
};

}  // namespace ferry::dipc
