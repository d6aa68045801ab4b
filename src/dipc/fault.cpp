// Fault injection points, driven by FERRY_FAULT_PAUSE; empty unless FERRY_FAULT_INJECTION.
#include "dipc/fault.hpp"

#ifdef FERRY_FAULT_INJECTION

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ferry::dipc::internal {

namespace {

struct Plan {
  std::string role;
  std::string phase;
  int nth = 1;
  bool on = false;
};

Plan ReadPlan() {
  Plan plan;
  const char* env = std::getenv("FERRY_FAULT_PAUSE");
  if (env == nullptr || *env == '\0') return plan;
  const std::string text = env;
  const size_t a = text.find(':');
  if (a == std::string::npos) return plan;
  const size_t b = text.find(':', a + 1);
  plan.role = text.substr(0, a);
  plan.phase = text.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
  if (b != std::string::npos) {
    // A count that is not a number, or below 1, pauses at the first time.
    int nth = 1;
    std::from_chars(text.data() + b + 1, text.data() + text.size(), nth);
    plan.nth = std::max(1, nth);
  }
  plan.on = true;
  return plan;
}

// A pipe that SIGCONT's handler writes to: a paused point waits on it, with no timer.
int g_continued[2] = {-1, -1};
// How often a paused point looks at its cancellation, in milliseconds.
constexpr int kCancelCheckMs = 100;

void OnContinue(int /*sig*/) {
  const char byte = 1;
  [[maybe_unused]] const ssize_t w = ::write(g_continued[1], &byte, 1);
}

void WatchContinue() {
  if (::pipe2(g_continued, O_CLOEXEC | O_NONBLOCK) != 0) return;
  struct sigaction action {};
  action.sa_handler = OnContinue;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGCONT, &action, nullptr);
}

}  // namespace

void FaultPoint(const char* role, const char* phase, const std::function<bool()>& cancelled) {
  static const Plan plan = ReadPlan();
  static std::atomic<int> reached{0};
  if (!plan.on || plan.role != role || plan.phase != phase) return;
  if (++reached != plan.nth) return;
  // Set up before the line below: the test may stop and continue the process as soon as it
  // reads it.
  WatchContinue();
  char line[128];
  const int n = std::snprintf(line, sizeof(line), "ferry-fault: paused at %s %s\n", role, phase);
  [[maybe_unused]] const ssize_t w = ::write(STDERR_FILENO, line, static_cast<size_t>(n));
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::minutes(10);
  pollfd fd{g_continued[0], POLLIN, 0};
  // Woken by SIGCONT at once; the timeout only bounds how late a cancellation is seen.
  while (Clock::now() < end && !(cancelled && cancelled())) {
    if (::poll(&fd, 1, kCancelCheckMs) > 0) return;
  }
}

}  // namespace ferry::dipc::internal

#endif  // FERRY_FAULT_INJECTION
