// Device base class, the C trampolines behind FerryDevice, and the generic dispatch of copies
// and moves between two devices.
#include "ferry/device/device.hpp"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "device/device_support.hpp"
#include "ferry/core/status_code.hpp"

namespace ferry {

namespace {

Status Caught() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory("out of memory");
  } catch (const std::exception& e) {
    return Status::Invalid(e.what());
  } catch (...) {
    return Status::Invalid("unknown C++ exception");
  }
}

int Report(const Status& st, FerryError* error) {
  if (!st.ok() && error != nullptr) {
    std::snprintf(error->message, sizeof(error->message), "%s", st.message().c_str());
  }
  return CErrorCodeOf(st);
}

template <typename Body>
int Trampoline(FerryError* error, Body&& body) noexcept {
  try {
    return Report(body(), error);
  } catch (...) {
    return Report(Caught(), error);
  }
}

Status Unknown(const FerryDevice* device, const char* role) {
  return Status::NotSupported(std::string(role) + " device (type " +
                              std::to_string(device ? device->device_type : -1) +
                              ") was not made by ferry; ferry's callbacks only drive its own");
}

int CArrayInit(FerryDevice* device, ArrowDeviceArray* device_array, ArrowArray* array,
               void* sync_event, void* stream, FerryError* error) {
  return Trampoline(error, [&]() -> Status {
    Device* dev = Device::FromC(device);
    if (dev == nullptr) return Unknown(device, "the");
    return dev->InitArray(device_array, array, sync_event, stream);
  });
}

int CArrayMove(FerryDevice* device_src, ArrowDeviceArray* src, FerryDevice* device_dst,
               ArrowDeviceArray* dst, FerryError* error) {
  return Trampoline(error, [&]() -> Status {
    Device* s = Device::FromC(device_src);
    Device* d = Device::FromC(device_dst);
    if (s == nullptr) return Unknown(device_src, "the source");
    if (d == nullptr) return Unknown(device_dst, "the destination");
    return internal::ZeroCopyMove(*s, src, *d, dst);
  });
}

int CBufferInit(FerryDevice* device_src, FerryBufferView src, FerryDevice* device_dst,
                FerryBuffer* dst, void* stream, FerryError* error) {
  return Trampoline(error, [&]() -> Status {
    Device* s = Device::FromC(device_src);
    Device* d = Device::FromC(device_dst);
    if (s == nullptr) return Unknown(device_src, "the source");
    if (d == nullptr) return Unknown(device_dst, "the destination");
    return internal::BufferInit(*s, src, *d, dst, stream);
  });
}

int CBufferMove(FerryDevice* device_src, FerryBuffer* src, FerryDevice* device_dst,
                FerryBuffer* dst, FerryError* error) {
  return Trampoline(error, [&]() -> Status {
    Device* s = Device::FromC(device_src);
    Device* d = Device::FromC(device_dst);
    if (s == nullptr) return Unknown(device_src, "the source");
    if (d == nullptr) return Unknown(device_dst, "the destination");
    return internal::BufferMove(*s, src, *d, dst);
  });
}

int CBufferCopy(FerryDevice* device_src, FerryBufferView src, FerryDevice* device_dst,
                FerryMutableBufferView dst, void* stream, FerryError* error) {
  return Trampoline(error, [&]() -> Status {
    Device* s = Device::FromC(device_src);
    Device* d = Device::FromC(device_dst);
    if (s == nullptr) return Unknown(device_src, "the source");
    if (d == nullptr) return Unknown(device_dst, "the destination");
    if (src.size != dst.size) {
      return Status::Invalid("buffer copy: source has " + std::to_string(src.size) +
                             " bytes but the destination " + std::to_string(dst.size));
    }
    return CopyBytes(*s, src.data, *d, dst.data, src.size, stream);
  });
}

int CSynchronizeEvent(FerryDevice* device, void* sync_event, void* stream, FerryError* error) {
  return Trampoline(error, [&]() -> Status {
    Device* dev = Device::FromC(device);
    if (dev == nullptr) return Unknown(device, "the");
    return dev->SynchronizeEvent(sync_event, stream);
  });
}

}  // namespace

Device::Device(MemoryKind kind, int64_t id) : kind_(kind), id_(id) {
  c_.device_type = kind.device_type;
  c_.device_id = id;
  c_.array_init = &CArrayInit;
  c_.array_move = &CArrayMove;
  c_.buffer_init = &CBufferInit;
  c_.buffer_move = &CBufferMove;
  c_.buffer_copy = &CBufferCopy;
  c_.synchronize_event = &CSynchronizeEvent;
  c_.release = nullptr;
  c_.private_data = this;
}

std::string Device::ToString() const {
  if (kind_.device_type == ARROW_DEVICE_CPU) return "CPU";
  return std::string(kind_.name) + ":" + std::to_string(id_);
}

Device* Device::FromC(const FerryDevice* device) noexcept {
  // Only a struct carrying ferry's own callbacks has a Device behind private_data.
  if (device == nullptr || device->synchronize_event != &CSynchronizeEvent) return nullptr;
  return static_cast<Device*>(device->private_data);
}

void internal::FillCDevice(Device& device, FerryDevice* out) noexcept {
  std::memcpy(out, device.c_device(), sizeof(FerryDevice));
}

Status Device::InitArray(ArrowDeviceArray* out, ArrowArray* array, void* event, void* stream) {
  (void)stream;  // a device without events has nothing to record
  if (event != nullptr) {
    return Status::Invalid(ToString() + " has no events, but a sync_event was given");
  }
  FERRY_RETURN_NOT_OK(internal::CheckInitArgs(out, array));
  internal::MoveIntoDeviceArray(*this, out, array, nullptr);
  return Status::OK();
}

Status Device::MoveArray(Device& src_dev, ArrowDeviceArray* src, Device& dst_dev,
                         ArrowDeviceArray* dst) {
  (void)src;
  (void)dst;
  return Status::NotSupported("no zero-copy move from " + src_dev.ToString() + " to " +
                              dst_dev.ToString());
}

Result<std::shared_ptr<void>> Device::RecordEvent(void* stream) {
  (void)stream;
  return Status::NotSupported(ToString() + " has no events to record");
}

DeviceStats Device::stats() const noexcept {
  DeviceStats s;
  s.round_trips = round_trips_.load(std::memory_order_relaxed);
  s.copies = copies_.load(std::memory_order_relaxed);
  s.bytes_copied = bytes_copied_.load(std::memory_order_relaxed);
  s.allocations = allocations_.load(std::memory_order_relaxed);
  s.event_waits = event_waits_.load(std::memory_order_relaxed);
  return s;
}

void Device::ResetStats() noexcept {
  round_trips_ = 0;
  copies_ = 0;
  bytes_copied_ = 0;
  allocations_ = 0;
  event_waits_ = 0;
}

Status CopyBytes(Device& src_dev, const void* src, Device& dst_dev, void* dst, int64_t n,
                 void* stream) {
  if (n < 0) return Status::Invalid("copy of a negative byte count (" + std::to_string(n) + ")");
  if (n == 0) return Status::OK();
  if (src == nullptr || dst == nullptr) {
    return Status::Invalid("copy of " + std::to_string(n) + " bytes from " +
                           (src ? std::string("") : "a NULL source on ") + src_dev.ToString() +
                           " to " + (dst ? std::string("") : "a NULL destination on ") +
                           dst_dev.ToString());
  }
  Status st = dst_dev.CopyBytes(src_dev, src, dst_dev, dst, n, stream);
  if (st.code() != StatusCode::kUnimplemented) return st;
  if (&src_dev != &dst_dev) {
    st = src_dev.CopyBytes(src_dev, src, dst_dev, dst, n, stream);
    if (st.code() != StatusCode::kUnimplemented) return st;
  }
  return Status::NotSupported("no copy path from " + src_dev.ToString() + " to " +
                              dst_dev.ToString() + " (copy through the CPU)");
}

Result<void*> InternalStreamFor(Device& a, Device& b) {
  if (a.device_type() != ARROW_DEVICE_CPU) return a.InternalStream();
  return b.InternalStream();
}

Status CheckDeviceRuntime() {
  // The C structs are fixed by the spec; a mismatch means a broken build or header mix-up.
  if (sizeof(ArrowDeviceArray) != 128 || offsetof(ArrowDeviceArray, sync_event) != 96) {
    return Status::Invalid("ArrowDeviceArray layout differs from the Arrow specification");
  }
  return Status::OK();
}

namespace internal {

Status NeedStream(Device& a, Device& b, void* stream, const char* what) {
  if (stream != nullptr) return Status::OK();
  FERRY_ASSIGN_OR_RAISE(void* internal_stream, InternalStreamFor(a, b));
  if (internal_stream == nullptr) return Status::OK();
  return Status::Invalid(std::string(what) + " on " +
                         (a.device_type() != ARROW_DEVICE_CPU ? a : b).ToString() +
                         " needs a stream (the stream-less variant uses an internal one)");
}

}  // namespace internal

}  // namespace ferry
