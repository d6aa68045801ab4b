// CUDA IPC: device memory of one process opened by another on the same host, without a copy. The
// handle is the driver's 64 bytes for the allocation that holds a range, plus the range's offset
// from the allocation's base, which is what a peer needs to address the same bytes.
#pragma once

#include <array>
#include <cstdint>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/device/device.hpp"

namespace ferry {

/// What another process needs to open device memory: the driver's IPC handle of the allocation
/// (plain bytes, safe to send anywhere), the byte offset of the exported range from the
/// allocation's base, and the allocation's size.
struct FERRY_EXPORT CudaIpcMemHandle {
  std::array<uint8_t, 64> bytes{};
  int64_t offset = 0;
  int64_t allocation_size = 0;
};

/// The handle of the CUDA device memory at `ptr` on `device` (a CUDA device). The memory must come
/// from cuMemAlloc, which `Device::Allocate` uses without a stream; stream-ordered (pool) memory
/// and managed memory are refused by the driver and here (EINVAL, naming why). Cheap; no copy.
FERRY_EXPORT Result<CudaIpcMemHandle> ExportCudaIpcMemHandle(Device& device, const void* ptr);

/// Another process's device memory, mapped into this one on a GPU. Owns the mapping: the
/// destructor closes it (cuIpcCloseMemHandle); move-only. A process that dies without closing
/// has its mappings closed by the driver. The exporter must keep the memory allocated while any
/// peer has it open.
class FERRY_EXPORT CudaIpcMapping {
 public:
  CudaIpcMapping() = default;
  CudaIpcMapping(CudaIpcMapping&& other) noexcept;
  CudaIpcMapping& operator=(CudaIpcMapping&& other) noexcept;
  CudaIpcMapping(const CudaIpcMapping&) = delete;
  CudaIpcMapping& operator=(const CudaIpcMapping&) = delete;
  ~CudaIpcMapping();

  /// The exported range: the opened allocation's base plus the handle's offset (device memory).
  void* data() const noexcept { return data_; }
  /// Bytes from data() to the end of the allocation.
  int64_t size() const noexcept { return size_; }
  /// The CUDA device it is mapped on.
  Device* device() const noexcept { return device_; }
  /// Close the mapping now (what the destructor does); idempotent.
  void Close() noexcept;

 private:
  friend Result<CudaIpcMapping> OpenCudaIpcMemHandle(Device& device,
                                                     const CudaIpcMemHandle& handle);
  Device* device_ = nullptr;
  void* base_ = nullptr;
  void* data_ = nullptr;
  int64_t size_ = 0;
};

/// Open a handle another process exported, on `device` (a CUDA device of this process). EINVAL
/// for an offset outside the allocation; EIO with the driver's reason for a handle it refuses (a
/// stale one, one from this very process, a dead exporter).
FERRY_EXPORT Result<CudaIpcMapping> OpenCudaIpcMemHandle(Device& device,
                                                         const CudaIpcMemHandle& handle);

}  // namespace ferry
