// The spin of a waiting receiver: the plain spin, stretched across a steady stream's gaps once
// kGaps of them in a row fit, and never past the wait's own timeout. Every instant is made by
// hand from a fixed origin, so each expected end is computed here, not measured.
#include "transport/adaptive_spin.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace ferry::transport::internal {
namespace {

using namespace std::chrono_literals;
using time_point = AdaptiveSpin::time_point;

const time_point kOrigin = time_point{} + 1h;

// Arrivals `gap` apart, the first at kOrigin; returns the last one.
time_point Steady(AdaptiveSpin* spin, std::chrono::microseconds gap, int arrivals) {
  time_point at = kOrigin;
  for (int i = 0; i < arrivals; ++i) {
    at = kOrigin + i * gap;
    spin->Arrived(at);
  }
  return at;
}

// A connection whose last kGaps + 1 messages came 100 µs apart, waiting with a 50 µs spin.
class SteadyStream : public ::testing::Test {
 protected:
  AdaptiveSpin spin{50us};
  const time_point last = Steady(&spin, 100us, AdaptiveSpin::kGaps + 1);
};

TEST(AdaptiveSpin, WithNothingLearntAWaitSpinsThePlainSpin) {
  AdaptiveSpin spin(50us);
  EXPECT_EQ(spin.Until(kOrigin, 1s), kOrigin + 50us);
  EXPECT_EQ(spin.gap(), 0ns);
}

TEST_F(SteadyStream, ItIsSpunAcrossUntilASpinPastItsNextMessage) {
  // Nine arrivals are eight gaps of 100 µs: the window is full.
  EXPECT_EQ(spin.gap(), 100us);
  // A wait that starts 10 µs after the last message spins until 100 µs + 50 µs after it.
  EXPECT_EQ(spin.Until(last + 10us, 1s), last + 150us);
}

TEST(AdaptiveSpin, ItSpinsAcrossTheLargestOfTheRecentGaps) {
  AdaptiveSpin spin(50us);
  time_point at = kOrigin;
  spin.Arrived(at);
  const std::chrono::microseconds gaps[] = {90us, 120us, 80us, 100us, 95us, 110us, 85us, 100us};
  for (const auto g : gaps) {
    at += g;
    spin.Arrived(at);
  }
  EXPECT_EQ(spin.gap(), 120us);
  EXPECT_EQ(spin.Until(at + 5us, 1s), at + 170us);
}

TEST(AdaptiveSpin, FewerThanAWindowOfGapsLeaveThePlainSpin) {
  AdaptiveSpin spin(50us);
  const time_point last = Steady(&spin, 100us, AdaptiveSpin::kGaps);  // seven gaps
  EXPECT_EQ(spin.gap(), 0ns);
  EXPECT_EQ(spin.Until(last + 10us, 1s), last + 60us);
}

TEST_F(SteadyStream, AGapTooLongToSpinAcrossStartsTheWindowAgain) {
  ASSERT_EQ(spin.gap(), 100us);
  time_point at = last + 201us;  // more than kStretch (4) spins of 50 µs
  spin.Arrived(at);
  EXPECT_EQ(spin.gap(), 0ns);
  EXPECT_EQ(spin.Until(at + 10us, 1s), at + 60us);
  // Eight short gaps in a row again, and the stream is spun across again.
  for (size_t i = 0; i < AdaptiveSpin::kGaps; ++i) {
    at += 100us;
    spin.Arrived(at);
  }
  EXPECT_EQ(spin.Until(at + 10us, 1s), at + 150us);
}

TEST(AdaptiveSpin, AStretchThatCouldNotReachTheMessageIsNotTaken) {
  AdaptiveSpin spin(50us);
  // Gaps of 180 µs fit the window (at most 200 µs), but a spin until 180 + 50 µs after the last
  // message, from 10 µs after it, would be 220 µs: past the stretch's 200, so it spins 50.
  const time_point last = Steady(&spin, 180us, AdaptiveSpin::kGaps + 1);
  ASSERT_EQ(spin.gap(), 180us);
  EXPECT_EQ(spin.Until(last + 10us, 1s), last + 60us);
  // From 30 µs after it, the stretch is exactly 200 µs: taken.
  EXPECT_EQ(spin.Until(last + 30us, 1s), last + 230us);
}

TEST_F(SteadyStream, AMessageOverdueGetsThePlainSpin) {
  // 300 µs after the last message it is 150 µs overdue: the plain spin, not a negative one.
  EXPECT_EQ(spin.Until(last + 300us, 1s), last + 350us);
}

TEST_F(SteadyStream, TheWaitsOwnTimeoutBoundsEverySpin) {
  EXPECT_EQ(spin.Until(last + 10us, 0ms), last + 10us);  // a look never spins
  // The longest timeout there is: no overflow, the stretch as before.
  EXPECT_EQ(spin.Until(last + 10us, std::chrono::milliseconds::max()), last + 150us);
  AdaptiveSpin long_spin(5ms);
  EXPECT_EQ(long_spin.Until(kOrigin, 1ms), kOrigin + 1ms);
}

TEST(AdaptiveSpin, NoSpinStaysNoSpin) {
  AdaptiveSpin spin(0us);
  const time_point last = Steady(&spin, 10us, AdaptiveSpin::kGaps + 1);
  EXPECT_EQ(spin.Until(last + 1us, 1s), last + 1us);
}

TEST_F(SteadyStream, ArrivalsOutOfOrderAreNotGaps) {
  spin.Arrived(last - 30us);  // two waiters, the later one recorded first
  EXPECT_EQ(spin.gap(), 100us);
  EXPECT_EQ(spin.Until(last + 10us, 1s), last + 150us);
}

}  // namespace
}  // namespace ferry::transport::internal
