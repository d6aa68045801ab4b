#include "transport/adaptive_spin.hpp"

#include <algorithm>

namespace ferry::transport::internal {

std::chrono::nanoseconds AdaptiveSpin::gap() const noexcept {
  if (seen_ < kGaps) return std::chrono::nanoseconds{0};
  return *std::max_element(gaps_.begin(), gaps_.end());
}

AdaptiveSpin::time_point AdaptiveSpin::Until(time_point now,
                                             std::chrono::milliseconds timeout) const noexcept {
  if (spin_.count() <= 0 || timeout.count() <= 0) return now;
  // Lengths, not instants: a long timeout added to `now` would overflow.
  std::chrono::nanoseconds length = spin_;
  const std::chrono::nanoseconds g = gap();
  if (g.count() > 0) {
    // A spin past the latest the recent gaps put it at: a message later than that is late
    // enough for the wake-up to matter less. A stretch that would end before the message comes
    // only burns the core: none, then.
    const std::chrono::nanoseconds due = last_ + g + spin_ - now;
    if (due <= std::chrono::nanoseconds(kStretch * spin_)) length = std::max(length, due);
  }
  // A spin is far shorter than an hour: longer timeouts bound nothing (and would overflow as ns).
  if (timeout < std::chrono::hours(1)) length = std::min<std::chrono::nanoseconds>(length, timeout);
  return now + length;
}

void AdaptiveSpin::Arrived(time_point at) noexcept {
  if (last_ != time_point{} && at > last_) {
    const std::chrono::nanoseconds g = at - last_;
    if (g > kStretch * spin_) {
      seen_ = 0;  // slower than it spins across: sleep through, until kGaps gaps fit again
    } else {
      gaps_[seen_ % kGaps] = g;
      ++seen_;
    }
  }
  last_ = std::max(last_, at);
}

}  // namespace ferry::transport::internal
