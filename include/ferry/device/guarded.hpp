// The guarded test device (ARROW_DEVICE_EXT_DEV, id 0): device memory the host cannot touch.
//
// Every buffer pointer it hands out lies in a PROT_NONE mapping of a memfd; the device's own
// copies go through a second, read-write mapping of the same memfd. Any host dereference of its
// memory faults, so a test that runs an algorithm on this device proves the algorithm only
// reaches device memory through the device. Its events and streams count what is done to them.
#pragma once

#include <atomic>
#include <cstdint>

#include "ferry/abi/export.h"
#include "ferry/core/bytes.hpp"
#include "ferry/device/device.hpp"

namespace ferry {

/// The guarded device's native event. A sync_event on this device is a `GuardedEvent**` (a
/// pointer to the handle, as with `CUevent*`). Create with `new`; an array that takes
/// ownership deletes it.
struct FERRY_EXPORT GuardedEvent {
  GuardedEvent() noexcept { live.fetch_add(1, std::memory_order_relaxed); }
  ~GuardedEvent() { live.fetch_sub(1, std::memory_order_relaxed); }
  GuardedEvent(const GuardedEvent&) = delete;
  GuardedEvent& operator=(const GuardedEvent&) = delete;
  /// Events alive in the process: tests assert that an owning array deletes its event.
  static inline std::atomic<int64_t> live{0};
  /// Times the host waited on it, a stream waited on it, and it was recorded.
  std::atomic<int64_t> host_waits{0};
  std::atomic<int64_t> stream_waits{0};
  std::atomic<int64_t> records{0};
};

/// The guarded device's native stream; a stream argument is a `GuardedStream**`. Work on it is
/// synchronous (copies are memcpy through the alias), but waits and synchronizes are counted.
struct FERRY_EXPORT GuardedStream {
  std::atomic<int64_t> event_waits{0};
  std::atomic<int64_t> synchronizes{0};
};

/// The guarded device (a process-wide singleton; never null).
FERRY_EXPORT Device* GuardedDevice() noexcept;

/// Whether `bytes` lie inside guarded device memory (a mapped chunk of the device).
FERRY_EXPORT bool IsGuardedMemory(ByteSpan bytes) noexcept;

/// Guarded allocations not yet freed (tests assert that releases free each block once).
FERRY_EXPORT int64_t GuardedLiveAllocations() noexcept;

}  // namespace ferry
