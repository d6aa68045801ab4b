// Device arrays: wrapping with owned events, and zero-copy moves.
#include "ferry/device/device_array.hpp"

#include <cstring>
#include <string>

#include "device/device_support.hpp"

namespace ferry {

namespace internal {

namespace {

// The wrapper an event-owning device array's ArrowArray points at: the producer's array and
// the event handle it now owns.
struct EventWrapper {
  ArrowArray parent;
  alignas(8) unsigned char handle[16];
  void (*destroy)(void* handle);
};

void ReleaseEventWrapper(ArrowArray* array) {
  auto* w = static_cast<EventWrapper*>(array->private_data);
  if (w->parent.release != nullptr) w->parent.release(&w->parent);
  if (w->destroy != nullptr) w->destroy(w->handle);
  delete w;
  array->release = nullptr;
}

}  // namespace

Status CheckInitArgs(const ArrowDeviceArray* out, const ArrowArray* array) {
  if (out == nullptr) return Status::Invalid("device array init: the output is NULL");
  if (array == nullptr) return Status::Invalid("device array init: the array is NULL");
  if (array->release == nullptr) {
    return Status::Invalid("device array init: the array is released");
  }
  return Status::OK();
}

void MoveIntoDeviceArray(Device& device, ArrowDeviceArray* out, ArrowArray* array,
                         void* sync_event) noexcept {
  std::memset(out, 0, sizeof(ArrowDeviceArray));
  std::memcpy(&out->array, array, sizeof(ArrowArray));
  array->release = nullptr;
  out->device_id = device.device_id();
  out->device_type = device.device_type();
  out->sync_event = sync_event;
}

Status MoveIntoDeviceArrayWithEvent(Device& device, ArrowDeviceArray* out, ArrowArray* array,
                                    const void* handle, size_t handle_size,
                                    void (*destroy)(void* handle)) {
  FERRY_RETURN_NOT_OK(CheckInitArgs(out, array));
  if (handle_size > sizeof(EventWrapper::handle)) {
    return Status::Invalid("event handle larger than 16 bytes");
  }
  auto* w = new EventWrapper{};
  std::memcpy(&w->parent, array, sizeof(ArrowArray));
  array->release = nullptr;
  std::memcpy(w->handle, handle, handle_size);
  w->destroy = destroy;
  std::memset(out, 0, sizeof(ArrowDeviceArray));
  // The outer array mirrors the parent's fields so consumers see the same tree.
  out->array = w->parent;
  out->array.release = &ReleaseEventWrapper;
  out->array.private_data = w;
  out->device_id = device.device_id();
  out->device_type = device.device_type();
  out->sync_event = w->handle;
  return Status::OK();
}

void Relabel(ArrowDeviceArray* src, Device& dst_device, ArrowDeviceArray* dst,
             bool drop_event) noexcept {
  std::memcpy(dst, src, sizeof(ArrowDeviceArray));
  src->array.release = nullptr;
  dst->device_type = dst_device.device_type();
  dst->device_id = dst_device.device_id();
  if (drop_event) dst->sync_event = nullptr;
}

Status ZeroCopyMove(Device& src_dev, ArrowDeviceArray* src, Device& dst_dev,
                    ArrowDeviceArray* dst) {
  if (src == nullptr || dst == nullptr) return Status::Invalid("device array move: NULL array");
  if (src->array.release == nullptr) return Status::Invalid("device array move: source released");
  if (src == dst) return Status::Invalid("device array move: source and destination are the same");
  if (&src_dev == &dst_dev) {
    DeviceArrayMove(src, dst);
    return Status::OK();
  }
  Status st = src_dev.MoveArray(src_dev, src, dst_dev, dst);
  if (st.code() != StatusCode::kUnimplemented) return st;
  st = dst_dev.MoveArray(src_dev, src, dst_dev, dst);
  if (st.code() != StatusCode::kUnimplemented) return st;
  return Status::NotSupported("no zero-copy move from " + src_dev.ToString() + " to " +
                              dst_dev.ToString() + ": the memory is not addressable there (" +
                              st.message() + "); copy with DeviceArrayView::Copy");
}

}  // namespace internal

Status DeviceArrayInit(Device& device, ArrowDeviceArray* out, ArrowArray* array, void* sync_event) {
  return device.InitArray(out, array, sync_event, nullptr);
}

Status DeviceArrayInitAsync(Device& device, ArrowDeviceArray* out, ArrowArray* array,
                            void* sync_event, void* stream) {
  return device.InitArray(out, array, sync_event, stream);
}

void DeviceArrayMove(ArrowDeviceArray* src, ArrowDeviceArray* dst) noexcept {
  std::memcpy(dst, src, sizeof(ArrowDeviceArray));
  src->array.release = nullptr;
}

Status MoveToDevice(ArrowDeviceArray* src, Device& dst_device, ArrowDeviceArray* dst) {
  if (src == nullptr) return Status::Invalid("move to device: the source is NULL");
  if (src->array.release == nullptr)
    return Status::Invalid("move to device: the source is released");
  FERRY_ASSIGN_OR_RAISE(Device * src_device, ResolveDevice(src->device_type, src->device_id));
  return internal::ZeroCopyMove(*src_device, src, dst_device, dst);
}

}  // namespace ferry
