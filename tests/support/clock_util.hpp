// Timeouts seen without waiting for them: a call that waits by a ManualClock runs on a thread of
// its own while the test moves the clock to one tick before the call's deadline (it must still be
// running) and then to the deadline (it must end there).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <utility>

#include "ferry/core/clock.hpp"

namespace ferry::testing {

/// The smallest step a Clock takes.
constexpr Clock::duration kTick{1};

/// Run `call` on a thread of its own. Once `waits` waits on `clock` are in progress (the call's
/// own; the test has not moved the clock since the call began), move `clock` forward by `limit`
/// less one tick, expect the call still running, then move it by the last tick and expect the
/// call to end well before the clock's real-time backstop. What `call` returned.
template <typename F>
auto AtTheDeadline(ManualClock& clock, Clock::duration limit, F call, int waits = 1) {
  auto running = std::async(std::launch::async, std::move(call));
  EXPECT_TRUE(clock.AwaitWaiters(waits, std::chrono::seconds(10)))
      << "the call never waited on the clock";
  clock.Advance(limit - kTick);
  EXPECT_EQ(running.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the call ended a tick before its deadline";
  clock.Advance(kTick);
  EXPECT_EQ(running.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the call did not end at its deadline";
  return running.get();
}

}  // namespace ferry::testing
