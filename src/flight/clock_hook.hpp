// Internal to the flight layer: which clock a Flight server runs on when its options name none,
// and the test trees' action that moves it. A `ferry serve` process cannot be handed a clock, so
// test trees (FERRY_FAULT_INJECTION) let FERRY_TEST_CLOCK=manual start it on a ManualClock and the
// advance-clock action move it; without FERRY_FAULT_INJECTION neither exists.
#pragma once

#include <memory>
#include <string>

#include "ferry/core/clock.hpp"
#include "ferry/core/result.hpp"

namespace ferry::flight::internal {

/// Clock::Real(); in test trees, a fresh ManualClock when FERRY_TEST_CLOCK=manual is set.
std::shared_ptr<Clock> DefaultClock();

#ifdef FERRY_FAULT_INJECTION
/// The advance-clock action (test trees only). `body` is "MS" or "MS:N": move `clock`, which
/// must be a ManualClock, forward by MS milliseconds, once at least N waits on it are in progress
/// (waiting up to ten seconds of real time for them: kDeadlineExceeded if they do not come). N
/// lets a test end the very wait it started (a peer question, a session's wait), with no race.
/// Answers "advanced by MS ms".
Result<std::string> AdvanceClock(Clock& clock, const std::string& body);
#endif

}  // namespace ferry::flight::internal
