// How large a benchmark runs: in full, or as a smoke run that proves in CI that its code paths
// still work (FERRY_BENCH_SMOKE=1, set by the docs test that runs docs/benchmarks.md's commands).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ferry::testing {

/// True when FERRY_BENCH_SMOKE is set and not "0": the benchmarks then move a few MiB, and their
/// figures mean nothing. Read once.
inline bool SmokeRun() {
  static const bool smoke = [] {
    const char* v = std::getenv("FERRY_BENCH_SMOKE");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return smoke;
}

/// `full` bytes, or at most 16 MiB in a smoke run.
inline int64_t ScaledBytes(int64_t full) {
  return SmokeRun() ? std::min<int64_t>(full, int64_t{16} << 20) : full;
}

/// `full` items (rows, values), or at most 100,000 in a smoke run.
inline int64_t ScaledCount(int64_t full) {
  return SmokeRun() ? std::min<int64_t>(full, 100'000) : full;
}

}  // namespace ferry::testing
