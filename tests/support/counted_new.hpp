// A suite's replaced operator new that counts, per thread, the allocations made through it, for
// tests that hold code to a number of allocations. Include it in exactly one file of a suite: it
// defines the suite's operator new and delete (other files read the count through
// allocation_count.hpp). Under ASan or TSan, whose own operator new must stay in place,
// FERRY_COUNT_ALLOCATIONS is 0 and nothing is defined or counted.
#pragma once

#include <cstdlib>
#include <new>

#include "support/allocation_count.hpp"

#if FERRY_COUNT_ALLOCATIONS
// For every thread: count, then allocate as the library's would. new[] and the nothrow forms
// come here through the standard library's own.
void* operator new(std::size_t size) {
  ++ferry::testing::allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// GCC, inlining these into the including file's callers, takes the pair for a mismatch.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
#endif
