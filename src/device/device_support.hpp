// Helpers shared by ferry's devices: array wrapping with owned events, relabelling moves and the
// generic buffer operations behind the C callbacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/device_abi.h"
#include "ferry/device/device.hpp"

namespace ferry::internal {

/// Copy `device`'s C struct into `out` (FerryDeviceInitCpu).
void FillCDevice(Device& device, FerryDevice* out) noexcept;

/// EINVAL unless `out` is non-null and `array` is a live (not released) array.
Status CheckInitArgs(const ArrowDeviceArray* out, const ArrowArray* array);

/// Move `array` into `out->array` labelled with `device`; `sync_event` is stored as given
/// (nullptr for none) and `reserved` is zeroed. Marks `array` released.
void MoveIntoDeviceArray(Device& device, ArrowDeviceArray* out, ArrowArray* array,
                         void* sync_event) noexcept;

/// Like MoveIntoDeviceArray, but `out` owns an event: the `handle_size` (<= 16) bytes at
/// `handle` are stored in a wrapper around `array`, `out->sync_event` points at them, and
/// releasing `out->array` calls `destroy(stored handle)` once after releasing `array`.
Status MoveIntoDeviceArrayWithEvent(Device& device, ArrowDeviceArray* out, ArrowArray* array,
                                    const void* handle, size_t handle_size,
                                    void (*destroy)(void* handle));

/// MoveIntoDeviceArrayWithEvent for a native handle (a CUevent, a cl_event, ...) passed by value.
template <typename Handle>
Status MoveIntoDeviceArrayWithHandle(Device& device, ArrowDeviceArray* out, ArrowArray* array,
                                     Handle handle, void (*destroy)(void* handle)) {
  static_assert(sizeof(Handle) <= 16, "the event wrapper stores at most 16 bytes");
  return MoveIntoDeviceArrayWithEvent(device, out, array, &handle, sizeof(Handle), destroy);
}

/// Move `src` to `dst` relabelled as `dst_device`. With `drop_event`, `dst->sync_event` becomes
/// NULL (the caller has already waited on it; the event itself is still freed with the array).
void Relabel(ArrowDeviceArray* src, Device& dst_device, ArrowDeviceArray* dst,
             bool drop_event) noexcept;

/// Ask the source device, then the destination, for a zero-copy move; ENOTSUP names the pair.
Status ZeroCopyMove(Device& src_dev, ArrowDeviceArray* src, Device& dst_dev, ArrowDeviceArray* dst);

/// Allocate `src.size` on `dst_dev` and copy `src` into it on `stream`.
Status BufferInit(Device& src_dev, FerryBufferView src, Device& dst_dev, FerryBuffer* dst,
                  void* stream);

/// Move `src` to `dst` without copying: same device, or memory the destination can address.
Status BufferMove(Device& src_dev, FerryBuffer* src, Device& dst_dev, FerryBuffer* dst);

/// Wrap a block from `device.Allocate` as a FerryBuffer whose release frees it there.
Status WrapBlock(Device& device, void* data, int64_t size, FerryBuffer* out);

/// OK when `stream` is given, or when neither `a` nor `b` has streams; otherwise an error naming
/// `what`: a stream-ordered call on a device with streams needs one.
Status NeedStream(Device& a, Device& b, void* stream, const char* what);

/// Wait on the host for `stream` on whichever of `a`/`b` owns it (no-op for a null stream).
Status SynchronizeStream(Device& a, Device& b, void* stream);

/// Call `f(const void* pointer)` for every buffer of `array`, its children and dictionary;
/// stops and returns false when `f` returns false.
template <typename F>
bool ForEachBuffer(const ArrowArray* array, F&& f, int depth = 0) {
  if (array == nullptr || depth > 64) return true;
  for (int64_t i = 0; i < array->n_buffers; ++i) {
    if (array->buffers[i] != nullptr && !f(array->buffers[i])) return false;
  }
  for (int64_t i = 0; i < array->n_children; ++i) {
    if (!ForEachBuffer(array->children[i], f, depth + 1)) return false;
  }
  return ForEachBuffer(array->dictionary, f, depth + 1);
}

}  // namespace ferry::internal

namespace ferry::internal {

/// The CUDA device for (type, ordinal); NotFound with the reason when no driver or GPU.
Result<Device*> ResolveCuda(ArrowDeviceType device_type, int64_t device_id);

/// Pinned host memory from a CUDA device's staging pool, for packing a whole transfer into one
/// copy that does not block the host. `token` belongs to the pool.
struct StagingBuffer {
  uint8_t* data = nullptr;
  void* token = nullptr;
};
/// ENOTSUP for devices without a pool (every non-CUDA device) and for sizes the pool refuses.
Result<StagingBuffer> AcquireStaging(Device& device, int64_t size);
/// Hand a buffer back to `device`'s pool: reused once the work queued on `stream` so far is done
/// (at once for a null stream: the caller has waited).
Status ReleaseStaging(Device& device, const StagingBuffer& buffer, void* stream);
/// The OpenCL device for an ordinal among SVM-capable devices; NotFound with the reason.
Result<Device*> ResolveOpenCl(int64_t device_id);
/// ListDevices for CUDA and OpenCL.
Result<std::vector<DeviceInfo>> ListCuda();
Result<std::vector<DeviceInfo>> ListOpenCl();

}  // namespace ferry::internal
