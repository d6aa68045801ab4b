// CUDA IPC memory handles: export a range of device memory, open another process's range.
#include "ferry/device/cuda_ipc.hpp"

#include <cstring>
#include <string>
#include <utility>

#include "device/cuda_gpu.hpp"

namespace ferry {

namespace {

using internal::cuda::CUdeviceptr;
using internal::cuda::CUipcMemHandle;
using internal::cuda::Gpu;
using internal::cuda::ScopedContext;

Result<Gpu*> GpuForIpc(Device& device) {
  if (device.device_type() != ARROW_DEVICE_CUDA) {
    return Status::Invalid("CUDA IPC needs a CUDA device, not " + device.ToString());
  }
  return internal::CudaGpuOf(device);
}

}  // namespace

Result<CudaIpcMemHandle> ExportCudaIpcMemHandle(Device& device, const void* ptr) {
  FERRY_ASSIGN_OR_RAISE(Gpu * gpu, GpuForIpc(device));
  if (ptr == nullptr) return Status::Invalid("CUDA IPC: cannot export a NULL pointer");
  const auto& d = gpu->driver();
  ScopedContext scope(d);
  FERRY_RETURN_NOT_OK(scope.Push(*gpu));
  CUdeviceptr base = 0;
  size_t size = 0;
  const auto p = reinterpret_cast<CUdeviceptr>(ptr);
  if (d.MemGetAddressRange(&base, &size, p) != internal::cuda::kSuccess) {
    return Status::Invalid("CUDA IPC: " + std::to_string(p) + " is not device memory of " +
                           device.ToString());
  }
  unsigned managed = 0;
  if (d.PointerGetAttribute(&managed, internal::cuda::kPointerAttributeIsManaged, p) ==
          internal::cuda::kSuccess &&
      managed != 0) {
    return Status::Invalid("CUDA IPC: managed memory cannot be exported");
  }
  CUipcMemHandle raw{};
  internal::cuda::CUresult rc = d.IpcGetMemHandle(&raw, base);
  if (rc != internal::cuda::kSuccess) {
    return internal::cuda::Error(d, rc, "IpcGetMemHandle")
        .WithContext("CUDA IPC exports memory from cuMemAlloc (Device::Allocate without a stream)");
  }
  CudaIpcMemHandle out;
  static_assert(sizeof(raw.reserved) == std::tuple_size_v<decltype(out.bytes)>);
  std::memcpy(out.bytes.data(), raw.reserved, sizeof(raw.reserved));
  out.offset = static_cast<int64_t>(p - base);
  out.allocation_size = static_cast<int64_t>(size);
  return out;
}

Result<CudaIpcMapping> OpenCudaIpcMemHandle(Device& device, const CudaIpcMemHandle& handle) {
  FERRY_ASSIGN_OR_RAISE(Gpu * gpu, GpuForIpc(device));
  if (handle.offset < 0 || handle.allocation_size <= 0 || handle.offset > handle.allocation_size) {
    return Status::Invalid("CUDA IPC: offset " + std::to_string(handle.offset) +
                           " lies outside the allocation of " +
                           std::to_string(handle.allocation_size) + " bytes");
  }
  const auto& d = gpu->driver();
  ScopedContext scope(d);
  FERRY_RETURN_NOT_OK(scope.Push(*gpu));
  CUipcMemHandle raw{};
  std::memcpy(raw.reserved, handle.bytes.data(), sizeof(raw.reserved));
  CUdeviceptr base = 0;
  FERRY_CUDA_CALL(d, IpcOpenMemHandle(&base, raw, internal::cuda::kIpcLazyEnablePeerAccess));
  CudaIpcMapping out;
  out.device_ = &device;
  out.base_ = reinterpret_cast<void*>(base);  // NOLINT(performance-no-int-to-ptr)
  // The driver knows the size of what it mapped; the handle's own claim is only checked.
  CUdeviceptr mapped_base = 0;
  size_t mapped = 0;
  if (d.MemGetAddressRange(&mapped_base, &mapped, base) == internal::cuda::kSuccess &&
      static_cast<int64_t>(mapped) < handle.allocation_size) {
    out.Close();
    return Status::Invalid("CUDA IPC: the handle claims " + std::to_string(handle.allocation_size) +
                           " bytes but the opened allocation has " + std::to_string(mapped));
  }
  out.data_ = static_cast<uint8_t*>(out.base_) + handle.offset;
  out.size_ = handle.allocation_size - handle.offset;
  return out;
}

CudaIpcMapping::CudaIpcMapping(CudaIpcMapping&& other) noexcept
    : device_(std::exchange(other.device_, nullptr)),
      base_(std::exchange(other.base_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

CudaIpcMapping& CudaIpcMapping::operator=(CudaIpcMapping&& other) noexcept {
  if (this != &other) {
    Close();
    device_ = std::exchange(other.device_, nullptr);
    base_ = std::exchange(other.base_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

CudaIpcMapping::~CudaIpcMapping() { Close(); }

void CudaIpcMapping::Close() noexcept {
  if (base_ == nullptr) return;
  Result<Gpu*> gpu = internal::CudaGpuOf(*device_);
  if (gpu.ok()) {
    const auto& d = (*gpu)->driver();
    ScopedContext scope(d);
    if (scope.Push(**gpu).ok()) d.IpcCloseMemHandle(reinterpret_cast<CUdeviceptr>(base_));
  }
  base_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace ferry
