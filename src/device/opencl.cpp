// OpenCL devices: any OpenCL 2.0+ device with coarse-grained shared virtual memory. Buffers are
// SVM pointers, streams are `cl_command_queue*`, events `cl_event*`. libOpenCL.so.1 is loaded
// at run time; the types below are the OpenCL ABI, declared here so no headers are needed.
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/device_support.hpp"

namespace ferry::internal {

namespace {

using cl_int = int32_t;
using cl_uint = uint32_t;
using cl_ulong = uint64_t;
using cl_bitfield = uint64_t;
struct ClOpaque;
using cl_platform_id = ClOpaque*;
using cl_device_id = ClOpaque*;
using cl_context = ClOpaque*;
using cl_command_queue = ClOpaque*;
using cl_event = ClOpaque*;

constexpr cl_int kClSuccess = 0;
constexpr cl_bitfield kClDeviceTypeAll = 0xFFFFFFFF;
constexpr cl_uint kClDeviceName = 0x102B;
constexpr cl_uint kClDeviceGlobalMemSize = 0x101F;
constexpr cl_uint kClDriverVersion = 0x102D;
constexpr cl_uint kClPlatformName = 0x0902;
constexpr cl_uint kClDeviceType = 0x1000;
constexpr cl_bitfield kClDeviceTypeCpu = 1 << 1;
constexpr cl_uint kClDeviceSvmCapabilities = 0x1053;
constexpr cl_bitfield kClSvmCoarseGrainBuffer = 1;
constexpr cl_bitfield kClMemReadWrite = 1;

struct Cl {
  cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id*, cl_uint*);
  cl_int (*GetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id*, cl_uint*);
  cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void*, size_t*);
  cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void*, size_t*);  // optional
  cl_context (*CreateContext)(const intptr_t*, cl_uint, const cl_device_id*,
                              void (*)(const char*, const void*, size_t, void*), void*, cl_int*);
  cl_command_queue (*CreateCommandQueueWithProperties)(cl_context, cl_device_id, const cl_ulong*,
                                                       cl_int*);
  cl_int (*ReleaseCommandQueue)(cl_command_queue);
  cl_int (*ReleaseContext)(cl_context);
  void* (*SVMAlloc)(cl_context, cl_bitfield, size_t, cl_uint);
  void (*SVMFree)(cl_context, void*);
  cl_int (*EnqueueSVMMemcpy)(cl_command_queue, cl_uint, void*, const void*, size_t, cl_uint,
                             const cl_event*, cl_event*);
  cl_int (*EnqueueMarkerWithWaitList)(cl_command_queue, cl_uint, const cl_event*, cl_event*);
  cl_int (*EnqueueBarrierWithWaitList)(cl_command_queue, cl_uint, const cl_event*, cl_event*);
  cl_int (*WaitForEvents)(cl_uint, const cl_event*);
  cl_int (*Finish)(cl_command_queue);
  cl_int (*ReleaseEvent)(cl_event);
};

Status ClError(cl_int code, const char* call) {
  return Status::IOError(std::string("cl") + call + " failed with OpenCL error " +
                         std::to_string(code));
}

#define FERRY_CL_CALL(call)                                        \
  do {                                                             \
    cl_int _ferry_cl = cl_.call;                                   \
    if (_ferry_cl != kClSuccess) return ClError(_ferry_cl, #call); \
  } while (false)

// One SVM-capable OpenCL device; its context and queue are created on first use.
class OpenClDevice final : public Device {
 public:
  OpenClDevice(const Cl& cl, cl_device_id id, int64_t ordinal, std::string name)
      : Device(MemoryKind{ARROW_DEVICE_OPENCL, false, true, "OPENCL"}, ordinal),
        cl_(cl),
        id_(id),
        name_(std::move(name)) {}

  ~OpenClDevice() override {
    if (queue_ != nullptr) cl_.ReleaseCommandQueue(queue_);
    if (context_ != nullptr) cl_.ReleaseContext(context_);
  }

  Result<void*> Allocate(int64_t size, void* /*stream*/) override {
    if (size < 0) return Status::Invalid(ToString() + ": allocation of a negative size");
    FERRY_RETURN_NOT_OK(Ensure());
    if (size == 0) return static_cast<void*>(nullptr);
    CountAllocation();
    // On a CPU device SVM is ordinary host memory: large blocks get huge pages, as the CPU
    // device's do, so first-touch page faults do not dominate a copy into a fresh block.
    const bool huge = cpu_device_ && size >= kHugeThreshold;
    void* p = cl_.SVMAlloc(context_, kClMemReadWrite, static_cast<size_t>(size), 64);
    if (p == nullptr) {
      return Status::OutOfMemory(ToString() + ": clSVMAlloc of " + std::to_string(size) +
                                 " bytes failed");
    }
    if (huge) {
      // SVM alignment is capped by the largest OpenCL type, so advise the huge-page-aligned
      // interior; a refusal only costs speed.
      const uintptr_t begin =
          (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) / kHugePage * kHugePage;
      const uintptr_t end =
          (reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(size)) / kHugePage * kHugePage;
      if (end > begin) {
        void* first = reinterpret_cast<void*>(begin);  // NOLINT(performance-no-int-to-ptr)
        (void)madvise(first, end - begin, MADV_HUGEPAGE);
      }
    }
    return p;
  }

  void Free(void* ptr, int64_t /*size*/) noexcept override {
    if (ptr == nullptr || context_ == nullptr) return;
    // clSVMFree does not wait; ferry's own queue may still be reading the block.
    cl_.Finish(queue_);
    cl_.SVMFree(context_, ptr);
  }

  Status CopyBytes(Device& src_dev, const void* src, Device& dst_dev, void* dst, int64_t n,
                   void* stream) override {
    const bool src_ok = &src_dev == this || src_dev.host_accessible();
    const bool dst_ok = &dst_dev == this || dst_dev.host_accessible();
    if (!src_ok || !dst_ok) {
      return Status::NotSupported("OpenCL copies only to and from host memory");
    }
    FERRY_RETURN_NOT_OK(Ensure());
    cl_command_queue q = stream ? *static_cast<cl_command_queue*>(stream) : queue_;
    FERRY_CL_CALL(EnqueueSVMMemcpy(q, /*blocking=*/stream == nullptr ? 1 : 0, dst, src,
                                   static_cast<size_t>(n), 0, nullptr, nullptr));
    CountCopy(n);
    return Status::OK();
  }

  Status SynchronizeEvent(void* event, void* stream) override {
    FERRY_RETURN_NOT_OK(Ensure());
    if (event != nullptr) {
      cl_event ev = *static_cast<cl_event*>(event);
      CountEventWait();
      if (stream != nullptr) {
        FERRY_CL_CALL(
            EnqueueBarrierWithWaitList(*static_cast<cl_command_queue*>(stream), 1, &ev, nullptr));
      } else {
        FERRY_CL_CALL(WaitForEvents(1, &ev));
        CountRoundTrip();
      }
    } else if (stream != nullptr) {
      FERRY_CL_CALL(Finish(*static_cast<cl_command_queue*>(stream)));
      CountRoundTrip();
    }
    return Status::OK();
  }

  Status InitArray(ArrowDeviceArray* out, ArrowArray* array, void* event, void* stream) override {
    FERRY_RETURN_NOT_OK(internal::CheckInitArgs(out, array));
    if (event == nullptr && stream == nullptr) {
      internal::MoveIntoDeviceArray(*this, out, array, nullptr);
      return Status::OK();
    }
    cl_event ev = nullptr;
    if (event != nullptr) {
      // An OpenCL event is recorded when its command is enqueued; a given one is kept as is.
      ev = *static_cast<cl_event*>(event);
    } else {
      FERRY_CL_CALL(
          EnqueueMarkerWithWaitList(*static_cast<cl_command_queue*>(stream), 0, nullptr, &ev));
    }
    static const Cl* cl = &cl_;
    Status st = internal::MoveIntoDeviceArrayWithHandle(*this, out, array, ev, [](void* handle) {
      cl->ReleaseEvent(*static_cast<cl_event*>(handle));
    });
    if (!st.ok() && event == nullptr) cl_.ReleaseEvent(ev);
    return st;
  }

  Result<void*> InternalStream() override {
    FERRY_RETURN_NOT_OK(Ensure());
    return static_cast<void*>(&queue_);
  }

  const std::string& name() const { return name_; }

 private:
  Status Ensure() {
    std::call_once(once_, [&] { init_ = Init(); });
    return init_;
  }
  Status Init() {
    cl_int rc = kClSuccess;
    context_ = cl_.CreateContext(nullptr, 1, &id_, nullptr, nullptr, &rc);
    if (rc != kClSuccess || context_ == nullptr) return ClError(rc, "CreateContext");
    queue_ = cl_.CreateCommandQueueWithProperties(context_, id_, nullptr, &rc);
    if (rc != kClSuccess || queue_ == nullptr)
      return ClError(rc, "CreateCommandQueueWithProperties");
    cl_bitfield type = 0;
    if (cl_.GetDeviceInfo(id_, kClDeviceType, sizeof(type), &type, nullptr) == kClSuccess) {
      cpu_device_ = (type & kClDeviceTypeCpu) != 0;
    }
    return Status::OK();
  }

  const Cl& cl_;
  cl_device_id id_;
  std::string name_;
  std::once_flag once_;
  Status init_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  bool cpu_device_ = false;
  static constexpr int64_t kHugeThreshold = int64_t{4} << 20;
  static constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
};

struct Platform {
  Cl cl{};
  Status status;
  std::vector<std::unique_ptr<OpenClDevice>> devices;
  // Every device of every platform, SVM-capable or not, once the runtime has been enumerated.
  bool enumerated = false;
  std::vector<DeviceInfo> listed;
};

// A string property of a device or platform; empty when the runtime does not answer.
template <typename Handle>
std::string InfoString(cl_int (*get)(Handle, cl_uint, size_t, void*, size_t*), Handle h,
                       cl_uint what) {
  char text[256] = {0};
  if (get == nullptr || get(h, what, sizeof(text) - 1, text, nullptr) != kClSuccess) return {};
  return text;
}

template <typename F>
bool Bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

void Load(Platform& p) {
  const char* path = std::getenv("FERRY_OPENCL_LIBRARY");
  if (path == nullptr || *path == '\0') path = "libOpenCL.so.1";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    p.status = Status::NotFound(std::string("no OpenCL runtime: dlopen(") + path +
                                ") failed: " + (why ? why : "unknown error"));
    return;
  }
  Cl& c = p.cl;
  const char* missing = nullptr;
  auto need = [&](const char* name, auto* fn) {
    if (!Bind(lib, name, fn) && missing == nullptr) missing = name;
  };
  need("clGetPlatformIDs", &c.GetPlatformIDs);
  need("clGetDeviceIDs", &c.GetDeviceIDs);
  need("clGetDeviceInfo", &c.GetDeviceInfo);
  need("clCreateContext", &c.CreateContext);
  need("clCreateCommandQueueWithProperties", &c.CreateCommandQueueWithProperties);
  need("clReleaseCommandQueue", &c.ReleaseCommandQueue);
  need("clReleaseContext", &c.ReleaseContext);
  need("clSVMAlloc", &c.SVMAlloc);
  need("clSVMFree", &c.SVMFree);
  need("clEnqueueSVMMemcpy", &c.EnqueueSVMMemcpy);
  need("clEnqueueMarkerWithWaitList", &c.EnqueueMarkerWithWaitList);
  need("clEnqueueBarrierWithWaitList", &c.EnqueueBarrierWithWaitList);
  need("clWaitForEvents", &c.WaitForEvents);
  need("clFinish", &c.Finish);
  need("clReleaseEvent", &c.ReleaseEvent);
  Bind(lib, "clGetPlatformInfo", &c.GetPlatformInfo);
  if (missing != nullptr) {
    p.status = Status::NotFound(std::string("the OpenCL runtime at ") + path + " lacks " + missing +
                                " (OpenCL 2.0 is needed for shared virtual memory)");
    return;
  }
  cl_uint n_platforms = 0;
  if (c.GetPlatformIDs(0, nullptr, &n_platforms) != kClSuccess || n_platforms == 0) {
    p.status = Status::NotFound("OpenCL runtime found but it has no platform (no ICD installed?)");
    return;
  }
  std::vector<cl_platform_id> platforms(n_platforms);
  c.GetPlatformIDs(n_platforms, platforms.data(), nullptr);
  p.enumerated = true;
  for (cl_platform_id platform : platforms) {
    cl_uint n = 0;
    if (c.GetDeviceIDs(platform, kClDeviceTypeAll, 0, nullptr, &n) != kClSuccess || n == 0) {
      continue;
    }
    std::vector<cl_device_id> ids(n);
    c.GetDeviceIDs(platform, kClDeviceTypeAll, n, ids.data(), nullptr);
    for (cl_device_id id : ids) {
      DeviceInfo info;
      info.device_type = ARROW_DEVICE_OPENCL;
      info.platform = InfoString(c.GetPlatformInfo, platform, kClPlatformName);
      info.name = InfoString(c.GetDeviceInfo, id, kClDeviceName);
      info.driver_version = InfoString(c.GetDeviceInfo, id, kClDriverVersion);
      cl_ulong memory = 0;
      if (c.GetDeviceInfo(id, kClDeviceGlobalMemSize, sizeof(memory), &memory, nullptr) ==
          kClSuccess) {
        info.memory_bytes = static_cast<int64_t>(memory);
      }
      cl_bitfield svm = 0;
      info.svm =
          c.GetDeviceInfo(id, kClDeviceSvmCapabilities, sizeof(svm), &svm, nullptr) == kClSuccess &&
          (svm & kClSvmCoarseGrainBuffer) != 0;
      if (info.svm) {
        info.device_id = static_cast<int64_t>(p.devices.size());
        p.devices.push_back(std::make_unique<OpenClDevice>(c, id, info.device_id, info.name));
      }
      p.listed.push_back(std::move(info));
    }
  }
  if (p.devices.empty()) {
    p.status = Status::NotFound("no OpenCL device with shared virtual memory (OpenCL 2.0+)");
  }
}

Platform& GetPlatform() {
  static Platform platform;
  static std::once_flag once;
  std::call_once(once, [] { Load(platform); });
  return platform;
}

}  // namespace

Result<Device*> ResolveOpenCl(int64_t device_id) {
  Platform& p = GetPlatform();
  if (!p.status.ok()) return p.status;
  if (device_id < 0 || device_id >= static_cast<int64_t>(p.devices.size())) {
    return Status::NotFound("OPENCL device " + std::to_string(device_id) + " does not exist (" +
                            std::to_string(p.devices.size()) + " with shared virtual memory)");
  }
  return static_cast<Device*>(p.devices[static_cast<size_t>(device_id)].get());
}

Result<std::vector<DeviceInfo>> ListOpenCl() {
  Platform& p = GetPlatform();
  if (!p.enumerated) return p.status;
  return p.listed;
}

}  // namespace ferry::internal
