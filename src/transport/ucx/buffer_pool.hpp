// Internal to the UCX transport: receive buffers, recycled when large.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ferry/core/clock.hpp"

namespace ferry::transport::internal::ucx {

/// A 64-byte-aligned buffer of at least `size` bytes, or NULL when out of memory. Buffers of
/// 16 KiB or more are recycled process-wide: a returned one waits up to a second for reuse (at
/// most 2 GiB, or an eighth of the machine's memory, wait at once; of buffers under 1 MiB, which
/// go by power-of-two class, at most 64 MiB), then goes back to the system. One of 4 MiB or more
/// goes back lazily: its pages are the kernel's to take (MADV_FREE) for 30 s more, while it can
/// still be reused, and it is unmapped after that.
/// A fresh 64 MiB allocation costs an mmap and 16,384 page faults, about as long as moving its
/// bytes over shared memory. A forked child starts with none waiting; at exit the cache is emptied
/// and its thread joined.
std::shared_ptr<uint8_t> TakeBuffer(size_t size);

/// The bytes now waiting for reuse (for tests and diagnostics).
size_t CachedBufferBytes();
/// The bytes of buffers past their second, whose pages the kernel may take (for tests and
/// diagnostics).
size_t LazyBufferBytes();

/// For tests: time the wait for reuse by `clock` from now on (NULL: Clock::Real()); what waits
/// now starts its wait anew by it. A test moves a ManualClock instead of waiting a second.
void SetBufferPoolClock(std::shared_ptr<Clock> clock);
/// For tests: wait, at most `limit` of real time, until exactly `cached` bytes wait for reuse
/// and `lazy` bytes lazily (the reaper moved and released what was due). True if they do.
bool AwaitBufferBytes(size_t cached, size_t lazy, std::chrono::milliseconds limit);

}  // namespace ferry::transport::internal::ucx
