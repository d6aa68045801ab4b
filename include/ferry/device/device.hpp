// Device: one memory space (CPU, a GPU ordinal, an OpenCL device, the guarded test device) and
// the operations that allocate, copy and synchronize its memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/device_abi.h"
#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"

namespace ferry {

/// What a kind of memory allows. Host- and device-accessibility are properties of the memory
/// kind, not of a device subclass: CUDA_HOST and CUDA_MANAGED memory are both.
struct FERRY_EXPORT MemoryKind {
  ArrowDeviceType device_type = ARROW_DEVICE_CPU;
  /// The host may dereference pointers (once the array's sync event has been waited on).
  bool host_accessible = true;
  /// Kernels on an accelerator may dereference pointers.
  bool device_accessible = false;
  /// Short name used in messages and ToString ("CPU", "CUDA", "CUDA_HOST", ...).
  const char* name = "CPU";
};

/// Counters every device keeps, for tests and benchmarks. A round trip is one time the host
/// waits for device work (a stream synchronize or a host-side event wait).
struct FERRY_EXPORT DeviceStats {
  int64_t round_trips = 0;
  int64_t copies = 0;
  int64_t bytes_copied = 0;
  int64_t allocations = 0;
  int64_t event_waits = 0;
};

/// A memory space and its operations. Ferry owns every Device it hands out (they live until
/// exit); the C view of one is `c_device()`, whose callbacks call back into this object.
/// Streams and events are pointers to the native handle (`CUstream*`, `cl_command_queue*`, ...).
class FERRY_EXPORT Device {
 public:
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ArrowDeviceType device_type() const noexcept { return kind_.device_type; }
  int64_t device_id() const noexcept { return id_; }
  const MemoryKind& memory() const noexcept { return kind_; }
  bool host_accessible() const noexcept { return kind_.host_accessible; }
  /// "CPU", "CUDA:0", "OPENCL:1", ...
  std::string ToString() const;

  /// The C struct for this device; its private_data points back here.
  FerryDevice* c_device() noexcept { return &c_; }
  /// The ferry Device behind a C device, or nullptr when the struct was not made by ferry
  /// (ferry never reads a foreign struct's private_data).
  static Device* FromC(const FerryDevice* device) noexcept;

  /// Allocate `size` bytes (0 allowed; may return nullptr) ordered on `stream` (may be null).
  virtual Result<void*> Allocate(int64_t size, void* stream) = 0;
  /// Free a block from Allocate. Synchronous: waits for work that uses it where the API must.
  virtual void Free(void* ptr, int64_t size) noexcept = 0;
  /// Copy `n` bytes between `src_dev` and `dst_dev`, one of which is this device, ordered on
  /// `stream`; a null `stream` (BufferCopy's) makes the copy complete on return, on the device's
  /// internal stream. Returns ENOTSUP when this device does not handle the pair (the caller then
  /// asks the other device). Host-side copies complete before returning.
  virtual Status CopyBytes(Device& src_dev, const void* src, Device& dst_dev, void* dst, int64_t n,
                           void* stream) = 0;
  /// Event and stream: the stream waits on the event. Event only: the host waits. Stream only:
  /// the host waits for the stream to drain (really synchronizes). Neither: nothing.
  virtual Status SynchronizeEvent(void* event, void* stream) = 0;
  /// Wrap `array` (moved in; marked released on success) into `out` on this device. A given
  /// event is owned by `out`; given only a stream, an event is created and recorded on it.
  /// Devices without events (the CPU) reject a non-null event.
  virtual Status InitArray(ArrowDeviceArray* out, ArrowArray* array, void* event, void* stream);
  /// Move `src` (on `src_dev`) to `dst` on `dst_dev` without copying any buffer; one of the two
  /// devices is this one. ENOTSUP when the memory is not reachable from the destination.
  virtual Status MoveArray(Device& src_dev, ArrowDeviceArray* src, Device& dst_dev,
                           ArrowDeviceArray* dst);
  /// The stream ferry's stream-less convenience calls use on this device (created lazily,
  /// never the legacy default stream), or nullptr where the device needs none (CPU).
  virtual Result<void*> InternalStream() { return static_cast<void*>(nullptr); }
  /// A new event recorded on `stream` (a native stream of this device), owned by the returned
  /// pointer, which points at the native handle as a sync_event does (`CUevent*`). It marks the
  /// work queued on `stream` so far; ENOTSUP on devices without events.
  virtual Result<std::shared_ptr<void>> RecordEvent(void* stream);

  /// Frees what this device keeps for reuse and no work uses now (CUDA's pinned staging blocks
  /// and their events), as PyTorch's `empty_cache` does; returns the bytes freed. Blocks still
  /// in use, or whose last copy is still running, stay. The next copy that needs one allocates
  /// it again.
  virtual Result<int64_t> ReleaseCached() { return int64_t{0}; }

  /// A snapshot of the counters, and a reset (tests and benchmarks only).
  DeviceStats stats() const noexcept;
  void ResetStats() noexcept;

 protected:
  Device(MemoryKind kind, int64_t id);
  void CountRoundTrip() noexcept { round_trips_.fetch_add(1, std::memory_order_relaxed); }
  void CountCopy(int64_t n) noexcept {
    copies_.fetch_add(1, std::memory_order_relaxed);
    bytes_copied_.fetch_add(n, std::memory_order_relaxed);
  }
  void CountAllocation() noexcept { allocations_.fetch_add(1, std::memory_order_relaxed); }
  void CountEventWait() noexcept { event_waits_.fetch_add(1, std::memory_order_relaxed); }

 private:
  MemoryKind kind_;
  int64_t id_;
  FerryDevice c_{};
  std::atomic<int64_t> round_trips_{0};
  std::atomic<int64_t> copies_{0};
  std::atomic<int64_t> bytes_copied_{0};
  std::atomic<int64_t> allocations_{0};
  std::atomic<int64_t> event_waits_{0};
};

/// The spec's name of a device type ("CPU", "CUDA", "CUDA_HOST", ...; "unknown" otherwise).
FERRY_EXPORT const char* DeviceTypeName(ArrowDeviceType device_type) noexcept;

/// The CPU device (type ARROW_DEVICE_CPU, id -1): a process-wide singleton, never null.
FERRY_EXPORT Device* CpuDevice() noexcept;

/// The device for (type, id): CPU (any id), CUDA / CUDA_HOST / CUDA_MANAGED (GPU ordinal),
/// OPENCL (ordinal among SVM-capable devices) or EXT_DEV id 0 (the guarded test device).
/// NotFound/NotSupported with the reason (no driver, bad ordinal, ...) otherwise. Thread-safe;
/// a GPU's context is retained on first use of that ordinal.
FERRY_EXPORT Result<Device*> ResolveDevice(ArrowDeviceType device_type, int64_t device_id);

/// The device a name spells, the one parser for every face (CLI, C, Python): "cpu", or KIND with
/// an optional ":N" (default 0) where KIND is cuda, cuda_host, cuda_managed, opencl or guarded.
/// Case does not matter, so Device::ToString() reads back. Then resolves as ResolveDevice does;
/// Invalid naming the accepted spellings for anything else.
FERRY_EXPORT Result<Device*> ParseDevice(std::string_view name);

/// One device of this machine as its driver describes it (for listings such as `ferry devices`).
/// Plain values; fields a kind does not have stay empty or zero.
struct FERRY_EXPORT DeviceInfo {
  ArrowDeviceType device_type = ARROW_DEVICE_CPU;
  /// The id to pass to ResolveDevice, or -1 when ferry cannot use the device (an OpenCL device
  /// without coarse-grained shared virtual memory).
  int64_t device_id = -1;
  std::string name;
  /// OpenCL: the platform's name.
  std::string platform;
  /// Global memory in bytes (0 when the driver does not say).
  int64_t memory_bytes = 0;
  /// CUDA: the driver API version ("12.4"); OpenCL: the device's driver version string.
  std::string driver_version;
  /// CUDA: the compute capability (major.minor).
  int compute_major = 0;
  int compute_minor = 0;
  /// OpenCL: the device supports coarse-grained shared virtual memory (ferry needs it).
  bool svm = false;
};

/// Every CUDA GPU (ARROW_DEVICE_CUDA) or every OpenCL device (ARROW_DEVICE_OPENCL, with or
/// without SVM) of this machine, asked of the driver (loaded on first use; no context is
/// created). NotFound with the reason ("no CUDA driver: ...") when there is none to ask;
/// NotSupported for other types.
FERRY_EXPORT Result<std::vector<DeviceInfo>> ListDevices(ArrowDeviceType device_type);

/// OK when ferry's device code can run: the C structs it was built with match this header
/// (checked at run time against the compiled layout).
FERRY_EXPORT Status CheckDeviceRuntime();

/// Copy `n` bytes from `src` on `src_dev` to `dst` on `dst_dev`, ordered on `stream`: asks the
/// destination device first, then the source, and fails with ENOTSUP naming the pair when
/// neither handles it.
FERRY_EXPORT Status CopyBytes(Device& src_dev, const void* src, Device& dst_dev, void* dst,
                              int64_t n, void* stream);

/// The stream a stream-less call between `a` and `b` uses: the internal stream of whichever is
/// not the CPU (the source when both are not).
FERRY_EXPORT Result<void*> InternalStreamFor(Device& a, Device& b);

}  // namespace ferry
