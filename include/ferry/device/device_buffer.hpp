// Device buffers: allocate-and-copy, copy into existing memory, and zero-copy moves.
#pragma once

#include "ferry/abi/device_abi.h"
#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/device/device.hpp"

namespace ferry {

/// A new buffer on `dst_dev` holding a copy of `src` (memory of `src_dev`). Uses the internal
/// stream and waits for it, so the copy is complete on return. One allocation, one copy.
FERRY_EXPORT Result<UniqueBuffer> BufferInit(Device& src_dev, FerryBufferView src, Device& dst_dev);
/// BufferInit ordered on `stream` (the native stream of the non-CPU device, or null for two
/// host devices); the copy may still be running on return.
FERRY_EXPORT Result<UniqueBuffer> BufferInitAsync(Device& src_dev, FerryBufferView src,
                                                  Device& dst_dev, void* stream);
/// Move `src` into `dst` without copying: the same device, or CUDA_HOST/CUDA_MANAGED memory to
/// a device that can address it. ENOTSUP (and `src` untouched) otherwise.
FERRY_EXPORT Status BufferMove(Device& src_dev, FerryBuffer* src, Device& dst_dev,
                               FerryBuffer* dst);
/// Copy `src` into the existing, writable `dst` (equal sizes), complete on return.
FERRY_EXPORT Status BufferCopy(Device& src_dev, FerryBufferView src, Device& dst_dev,
                               FerryMutableBufferView dst);
/// BufferCopy ordered on `stream`.
FERRY_EXPORT Status BufferCopyAsync(Device& src_dev, FerryBufferView src, Device& dst_dev,
                                    FerryMutableBufferView dst, void* stream);

}  // namespace ferry
