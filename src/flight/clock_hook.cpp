// A Flight server's default clock, and the test trees' hook that moves a manual one.
#include "flight/clock_hook.hpp"

#include <chrono>
#include <cstdlib>
#include <string_view>

namespace ferry::flight::internal {

#ifdef FERRY_FAULT_INJECTION

std::shared_ptr<Clock> DefaultClock() {
  const char* env = std::getenv("FERRY_TEST_CLOCK");
  if (env != nullptr && std::string_view(env) == "manual") return std::make_shared<ManualClock>();
  return Clock::Real();
}

namespace {

// A whole number of at most nine digits, else -1.
int64_t Digits(std::string_view text) {
  if (text.empty() || text.size() > 9) return -1;
  int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

Result<std::string> AdvanceClock(Clock& clock, const std::string& body) {
  auto* manual = dynamic_cast<ManualClock*>(&clock);
  if (manual == nullptr) {
    return Status::FailedPrecondition(
        "this server runs on the real clock: test trees start it on a manual one with "
        "FERRY_TEST_CLOCK=manual");
  }
  const std::string_view text = body;
  const size_t colon = text.find(':');
  const int64_t ms = Digits(text.substr(0, colon));
  const int64_t waiters = colon == std::string_view::npos ? 0 : Digits(text.substr(colon + 1));
  if (ms < 0 || waiters < 0) {
    return Status::Invalid("advance-clock takes MS or MS:WAITERS (whole numbers), not \"" + body +
                           "\"");
  }
  if (waiters > 0 && !manual->AwaitWaiters(static_cast<int>(waiters), std::chrono::seconds(10))) {
    return Status::DeadlineExceeded("advance-clock: " + std::to_string(manual->waiters()) +
                                    " waits on the clock after ten seconds, not " +
                                    std::to_string(waiters));
  }
  manual->Advance(std::chrono::milliseconds(ms));
  return "advanced by " + std::to_string(ms) + " ms";
}

#else

std::shared_ptr<Clock> DefaultClock() { return Clock::Real(); }

#endif  // FERRY_FAULT_INJECTION

}  // namespace ferry::flight::internal
