// C surface of the device layer: nanoarrow's device functions under ferry's names.
#include "ferry/device/device.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include "capi/error.hpp"
#include "ferry/capi/ferry.h"
#include "ferry/core/status_code.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_stream.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/device/device_buffer.hpp"

using ferry::Device;
using ferry::DeviceArrayView;
using ferry::Status;

namespace {

thread_local std::string g_resolve_error;

ferry::Result<Device*> Ferry(FerryDevice* device, const char* role) {
  if (device == nullptr) return Status::Invalid(std::string(role) + " device is NULL");
  Device* d = Device::FromC(device);
  if (d == nullptr) {
    return Status::NotSupported(
        std::string(role) + " device was not made by ferry (resolve it with FerryDeviceResolve)");
  }
  return d;
}

DeviceArrayView* View(FerryDeviceArrayView* view) {
  return static_cast<DeviceArrayView*>(view->array_view.private_data);
}

Status CheckView(FerryDeviceArrayView* view) {
  if (view == nullptr) return Status::Invalid("device array view is NULL");
  if (view->array_view.private_data == nullptr) {
    return Status::Invalid(
        "device array view is not initialised (call FerryArrayViewInitFromSchema on its "
        "array_view)");
  }
  return Status::OK();
}

void Mirror(FerryDeviceArrayView* view) {
  DeviceArrayView* v = View(view);
  const ferry::ArrayView& a = v->array_view();
  view->device = v->device() ? v->device()->c_device() : nullptr;
  view->array_view.length = a.length();
  view->array_view.offset = a.offset();
  view->array_view.null_count = a.null_count();
  view->array_view.n_buffers = a.n_buffers();
  view->array_view.n_children = a.n_children();
  view->array_view.storage_type = static_cast<int32_t>(a.type().storage_type);
}

void ReleaseCpuCopy(FerryDevice* device) { device->release = nullptr; }

// Destination first, then source: the callbacks' contract.
template <typename Call>
int Dispatch(FerryDevice* device_src, FerryDevice* device_dst, FerryError* error, Call&& call) {
  if (device_src == nullptr || device_dst == nullptr) {
    return ferry::capi::internal::FromStatus(ferry::Status::Invalid("device is NULL"), error);
  }
  int rc = call(device_dst);
  // A device that cannot do the copy says so with ENOTSUP (kUnimplemented); the other may.
  if (ferry::StatusCodeFromErrno(rc) != ferry::StatusCode::kUnimplemented ||
      device_src == device_dst) {
    return rc;
  }
  return call(device_src);
}

// The C device for what a resolver found, or NULL with the reason kept for
// FerryDeviceResolveError.
template <typename F>
struct FerryDevice* Resolved(F&& resolve) {
  try {
    ferry::Result<Device*> r = resolve();
    if (!r.ok()) {
      g_resolve_error = r.status().message();
      return nullptr;
    }
    g_resolve_error.clear();
    return r.value()->c_device();
  } catch (...) {
    g_resolve_error = "out of memory";
    return nullptr;
  }
}

}  // namespace

extern "C" {

FerryErrorCode FerryDeviceCheckRuntime(struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [] { return ferry::CheckDeviceRuntime(); });
}

struct FerryDevice* FerryDeviceCpu(void) {
  return ferry::CpuDevice()->c_device();
}

void FerryDeviceInitCpu(struct FerryDevice* device) {
  if (device == nullptr) return;
  std::memcpy(device, ferry::CpuDevice()->c_device(), sizeof(FerryDevice));
  device->release = &ReleaseCpuCopy;
}

struct FerryDevice* FerryDeviceResolve(ArrowDeviceType device_type, int64_t device_id) {
  return Resolved([&] { return ferry::ResolveDevice(device_type, device_id); });
}

struct FerryDevice* FerryDeviceParse(const char* name) {
  if (name == nullptr) {
    g_resolve_error = "device name is NULL";
    return nullptr;
  }
  return Resolved([&] { return ferry::ParseDevice(name); });
}

const char* FerryDeviceResolveError(void) { return g_resolve_error.c_str(); }

FerryErrorCode FerryDeviceReleaseCached(struct FerryDevice* device, int64_t* freed_bytes,
                                        struct FerryError* error) {
  if (freed_bytes != nullptr) *freed_bytes = 0;
  ferry::Device* d = ferry::Device::FromC(device);
  if (d == nullptr) {
    return ferry::capi::internal::FromStatus(
        ferry::Status::Invalid("release cached: the device is NULL or not ferry's"), error);
  }
  return ferry::capi::internal::Guard(error, [&]() -> ferry::Status {
    FERRY_ASSIGN_OR_RAISE(int64_t freed, d->ReleaseCached());
    if (freed_bytes != nullptr) *freed_bytes = freed;
    return ferry::Status::OK();
  });
}

FerryErrorCode FerryDeviceArrayInitAsync(struct FerryDevice* device,
                                         struct ArrowDeviceArray* device_array,
                                         struct ArrowArray* array, void* sync_event, void* stream,
                                         struct FerryError* error) {
  if (device == nullptr)
    return ferry::capi::internal::FromStatus(ferry::Status::Invalid("device is NULL"), error);
  if (device->array_init != nullptr) {
    return device->array_init(device, device_array, array, sync_event, stream, error);
  }
  // A device without array_init (a caller's own struct) gets a plain, event-less wrap.
  if (sync_event != nullptr) {
    return ferry::capi::internal::FromStatus(
        ferry::Status::Invalid("the device has no array_init but an event was given"), error);
  }
  if (device_array == nullptr || array == nullptr || array->release == nullptr) {
    return ferry::capi::internal::FromStatus(
        ferry::Status::Invalid("device array init: NULL or released array"), error);
  }
  std::memset(device_array, 0, sizeof(*device_array));
  std::memcpy(&device_array->array, array, sizeof(*array));
  array->release = nullptr;
  device_array->device_type = device->device_type;
  device_array->device_id = device->device_id;
  return 0;
}

FerryErrorCode FerryDeviceArrayInit(struct FerryDevice* device,
                                    struct ArrowDeviceArray* device_array, struct ArrowArray* array,
                                    void* sync_event, struct FerryError* error) {
  return FerryDeviceArrayInitAsync(device, device_array, array, sync_event, nullptr, error);
}

FerryErrorCode FerryDeviceBasicArrayStreamInit(struct ArrowDeviceArrayStream* device_array_stream,
                                               struct ArrowArrayStream* array_stream,
                                               struct FerryDevice* device,
                                               struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_ASSIGN_OR_RAISE(Device * d, Ferry(device, "the"));
    return ferry::BasicDeviceArrayStreamInit(device_array_stream, array_stream, *d);
  });
}

void FerryDeviceArrayViewInit(struct FerryDeviceArrayView* device_array_view) {
  if (device_array_view != nullptr) std::memset(device_array_view, 0, sizeof(*device_array_view));
}

void FerryDeviceArrayViewReset(struct FerryDeviceArrayView* device_array_view) {
  if (device_array_view == nullptr) return;
  FerryArrayViewReset(&device_array_view->array_view);
  device_array_view->device = nullptr;
}

FerryErrorCode FerryDeviceArrayViewSetArrayMinimal(struct FerryDeviceArrayView* view,
                                                   struct ArrowDeviceArray* device_array,
                                                   struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(view));
    Status st = View(view)->SetArrayMinimal(device_array);
    Mirror(view);
    return st;
  });
}

FerryErrorCode FerryDeviceArrayViewSetArray(struct FerryDeviceArrayView* view,
                                            struct ArrowDeviceArray* device_array,
                                            struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(view));
    Status st = View(view)->SetArray(device_array);
    Mirror(view);
    return st;
  });
}

FerryErrorCode FerryDeviceArrayViewSetArrayAsync(struct FerryDeviceArrayView* view,
                                                 struct ArrowDeviceArray* device_array,
                                                 void* stream, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(view));
    Status st = View(view)->SetArrayAsync(device_array, stream);
    Mirror(view);
    return st;
  });
}

FerryErrorCode FerryDeviceArrayViewCopyAsync(struct FerryDeviceArrayView* src,
                                             struct FerryDevice* device_dst,
                                             struct ArrowDeviceArray* dst, void* stream,
                                             struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(src));
    if (dst == nullptr) return Status::Invalid("destination device array is NULL");
    FERRY_ASSIGN_OR_RAISE(Device * d, Ferry(device_dst, "the destination"));
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueDeviceArray out, View(src)->CopyAsync(*d, stream));
    out.move_to(dst);
    return Status::OK();
  });
}

FerryErrorCode FerryDeviceArrayViewCopy(struct FerryDeviceArrayView* src,
                                        struct FerryDevice* device_dst,
                                        struct ArrowDeviceArray* dst, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_RETURN_NOT_OK(CheckView(src));
    if (dst == nullptr) return Status::Invalid("destination device array is NULL");
    FERRY_ASSIGN_OR_RAISE(Device * d, Ferry(device_dst, "the destination"));
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueDeviceArray out, View(src)->Copy(*d));
    out.move_to(dst);
    return Status::OK();
  });
}

FerryErrorCode FerryDeviceArrayMoveToDevice(struct ArrowDeviceArray* src,
                                            struct FerryDevice* device_dst,
                                            struct ArrowDeviceArray* dst,
                                            struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_ASSIGN_OR_RAISE(Device * d, Ferry(device_dst, "the destination"));
    return ferry::MoveToDevice(src, *d, dst);
  });
}

FerryErrorCode FerryDeviceBufferInitAsync(struct FerryDevice* device_src,
                                          struct FerryBufferView src,
                                          struct FerryDevice* device_dst, struct FerryBuffer* dst,
                                          void* stream, struct FerryError* error) {
  return Dispatch(device_src, device_dst, error, [&](FerryDevice* dev) {
    if (dev->buffer_init == nullptr) return ENOTSUP;
    return dev->buffer_init(device_src, src, device_dst, dst, stream, error);
  });
}

FerryErrorCode FerryDeviceBufferCopyAsync(struct FerryDevice* device_src,
                                          struct FerryBufferView src,
                                          struct FerryDevice* device_dst,
                                          struct FerryMutableBufferView dst, void* stream,
                                          struct FerryError* error) {
  return Dispatch(device_src, device_dst, error, [&](FerryDevice* dev) {
    if (dev->buffer_copy == nullptr) return ENOTSUP;
    return dev->buffer_copy(device_src, src, device_dst, dst, stream, error);
  });
}

FerryErrorCode FerryDeviceBufferMove(struct FerryDevice* device_src, struct FerryBuffer* src,
                                     struct FerryDevice* device_dst, struct FerryBuffer* dst,
                                     struct FerryError* error) {
  return Dispatch(device_src, device_dst, error, [&](FerryDevice* dev) {
    if (dev->buffer_move == nullptr) return ENOTSUP;
    return dev->buffer_move(device_src, src, device_dst, dst, error);
  });
}

FerryErrorCode FerryDeviceBufferInit(struct FerryDevice* device_src, struct FerryBufferView src,
                                     struct FerryDevice* device_dst, struct FerryBuffer* dst,
                                     struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_ASSIGN_OR_RAISE(Device * s, Ferry(device_src, "the source"));
    FERRY_ASSIGN_OR_RAISE(Device * d, Ferry(device_dst, "the destination"));
    if (dst == nullptr) return Status::Invalid("destination buffer is NULL");
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueBuffer out, ferry::BufferInit(*s, src, *d));
    out.move_to(dst);
    return Status::OK();
  });
}

FerryErrorCode FerryDeviceBufferCopy(struct FerryDevice* device_src, struct FerryBufferView src,
                                     struct FerryDevice* device_dst,
                                     struct FerryMutableBufferView dst, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_ASSIGN_OR_RAISE(Device * s, Ferry(device_src, "the source"));
    FERRY_ASSIGN_OR_RAISE(Device * d, Ferry(device_dst, "the destination"));
    return ferry::BufferCopy(*s, src, *d, dst);
  });
}

void FerryDeviceArrayMove(struct ArrowDeviceArray* src, struct ArrowDeviceArray* dst) {
  if (src == nullptr || dst == nullptr) return;
  ferry::DeviceArrayMove(src, dst);
}

}  // extern "C"
