// Fault injection points, driven by FERRY_FAULT_PAUSE; empty unless FERRY_FAULT_INJECTION.
#include "dipc/fault.hpp"

#ifdef FERRY_FAULT_INJECTION

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

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
  if (b != std::string::npos) plan.nth = std::max(1, std::atoi(text.c_str() + b + 1));
  plan.on = true;
  return plan;
}

}  // namespace

void FaultPoint(const char* role, const char* phase, const std::function<bool()>& cancelled) {
  static const Plan plan = ReadPlan();
  static std::atomic<int> reached{0};
  if (!plan.on || plan.role != role || plan.phase != phase) return;
  if (++reached != plan.nth) return;
  char line[128];
  const int n = std::snprintf(line, sizeof(line), "ferry-fault: paused at %s %s\n", role, phase);
  [[maybe_unused]] const ssize_t w = ::write(STDERR_FILENO, line, static_cast<size_t>(n));
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::minutes(10);
  auto last = Clock::now();
  while (Clock::now() < end && !(cancelled && cancelled())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // A gap far longer than the nap: the process was stopped, and now it is continued.
    if (Clock::now() - last > std::chrono::milliseconds(200)) return;
    last = Clock::now();
  }
}

}  // namespace ferry::dipc::internal

#endif  // FERRY_FAULT_INJECTION
