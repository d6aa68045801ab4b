// The count that counted_new.hpp's operator new keeps, for any file of a suite that reads it
// (counted_new.hpp itself is included in exactly one). Under ASan or TSan, whose own operator new
// must stay in place, FERRY_COUNT_ALLOCATIONS is 0 and nothing is counted.
#pragma once

#include <cstdint>

#include "ferry/core/sanitizers.hpp"

#if FERRY_ASAN || FERRY_TSAN
#define FERRY_COUNT_ALLOCATIONS 0
#else
#define FERRY_COUNT_ALLOCATIONS 1
#endif

#if FERRY_COUNT_ALLOCATIONS
namespace ferry::testing {
/// The allocations made so far through operator new on the calling thread.
inline thread_local int64_t allocations = 0;
}  // namespace ferry::testing
#endif
