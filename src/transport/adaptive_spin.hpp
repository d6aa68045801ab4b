// How long a waiting receiver spins before it sleeps, learnt from the gaps between the messages
// its waits received.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

namespace ferry::transport::internal {

/// The spin of one connection's waits. A wait spins for TransportLimits::spin, as a bound on
/// what a wake-up costs; where the connection's messages have come at most kStretch spins
/// apart, it spins on until the next one is due (the last one's arrival plus the largest of
/// the last kGaps gaps, plus one spin), so a steady stream is met by a spinning receiver and
/// not by a wake-up. Not thread-safe: its owner guards it. No allocation.
class AdaptiveSpin {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// `spin`: the plain spin (TransportLimits::spin); 0 turns spinning off, learnt or not.
  explicit AdaptiveSpin(std::chrono::microseconds spin) : spin_(spin) {}

  /// When a wait that found nothing at `now` stops spinning and sleeps: `now + spin`, or when
  /// the next message is due, if that is later and no later than `now + kStretch * spin`; never
  /// after `now + timeout` (the wait's own).
  time_point Until(time_point now, std::chrono::milliseconds timeout) const noexcept;

  /// A wait ended with its message at `at`.
  void Arrived(time_point at) noexcept;

  /// The largest of the last kGaps gaps, once that many in a row were short enough to spin
  /// across (0 until then: the stream is new, idle, irregular or slower than that).
  std::chrono::nanoseconds gap() const noexcept;

  /// How many plain spins one wait may stretch to. A gap longer than that is slept through,
  /// and the gaps learnt so far are forgotten.
  static constexpr int kStretch = 4;
  /// The gaps it takes the largest of.
  static constexpr size_t kGaps = 8;

 private:
  const std::chrono::microseconds spin_;
  time_point last_{};  // the last arrival
  std::array<std::chrono::nanoseconds, kGaps> gaps_{};
  size_t seen_ = 0;  // gaps since the last one too long to spin across
};

}  // namespace ferry::transport::internal
