// A first-in first-out queue over one vector whose room is reused: a mailbox's queues, which
// take and hand out a message or two per batch, allocate nothing once they have grown to their
// peak (std::deque allocates a block every few pushes and frees one every few pops).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace ferry::transport::internal {

/// Items in the order pushed; the oldest is popped, and any one may be erased. Popped slots are
/// reclaimed when the queue empties, or, under a lasting backlog, once they are half the vector
/// (moving the rest to its front: amortised O(1) a pop). Not thread-safe: the mailbox's lock
/// guards it.
template <class T>
class FifoQueue {
 public:
  using iterator = typename std::vector<T>::iterator;
  using const_iterator = typename std::vector<T>::const_iterator;

  bool empty() const noexcept { return head_ == items_.size(); }
  size_t size() const noexcept { return items_.size() - head_; }
  T& front() { return items_[head_]; }

  void push_back(T item) { items_.push_back(std::move(item)); }

  void pop_front() {
    items_[head_] = T{};  // what it owned goes now, not when the slot is reclaimed
    ++head_;
    if (head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ >= kReclaimAfter && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  /// Remove the item at `it` (an iterator of this queue's), keeping the others in order.
  void erase(iterator it) {
    if (it == begin()) {
      pop_front();
    } else {
      items_.erase(it);
    }
  }

  iterator begin() { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  const_iterator end() const { return items_.end(); }

 private:
  static constexpr size_t kReclaimAfter = 64;

  std::vector<T> items_;
  size_t head_ = 0;  // items_[0, head_) are popped
};

}  // namespace ferry::transport::internal
