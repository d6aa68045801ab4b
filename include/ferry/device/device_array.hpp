// Device arrays: wrapping an ArrowArray as an ArrowDeviceArray, and zero-copy moves between
// devices.
#pragma once

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/device/device.hpp"

namespace ferry {

/// Wrap `array` (moved in: marked released on success, untouched on failure) as `out` on
/// `device`. A non-null `sync_event` (a pointer to the native event) is owned by `out` from now
/// on. `out->reserved` is zeroed. No copy.
FERRY_EXPORT Status DeviceArrayInit(Device& device, ArrowDeviceArray* out, ArrowArray* array,
                                    void* sync_event);
/// DeviceArrayInit with a stream: given only a stream, an event is created, recorded on it and
/// owned by `out`; given both, the given event is recorded on the stream.
FERRY_EXPORT Status DeviceArrayInitAsync(Device& device, ArrowDeviceArray* out, ArrowArray* array,
                                         void* sync_event, void* stream);

/// Move `src` to `dst_device` without copying any buffer: the same device (bitwise move),
/// CUDA_HOST to CPU or CUDA, CUDA_MANAGED to CPU or CUDA, and CPU to CUDA_HOST/CUDA_MANAGED when
/// every buffer is such memory. Moving to the CPU waits on the source event on the host. ENOTSUP
/// (with `src` untouched and `dst` unwritten) when no zero-copy path exists: copy instead.
FERRY_EXPORT Status MoveToDevice(ArrowDeviceArray* src, Device& dst_device, ArrowDeviceArray* dst);

/// Move the struct `src` into `dst` and mark `src` released (the nanoarrow ArrowDeviceArrayMove).
FERRY_EXPORT void DeviceArrayMove(ArrowDeviceArray* src, ArrowDeviceArray* dst) noexcept;

}  // namespace ferry
