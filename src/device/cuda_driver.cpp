// Loading the CUDA driver with dlopen (libcuda.so.1, or $FERRY_CUDA_DRIVER) and naming its errors.
#include "device/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace ferry::internal {

namespace cuda {

namespace {

template <typename F>
bool Bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

struct Loaded {
  Driver driver{};
  Status status;
};

Loaded LoadDriver() {
  Loaded out;
  const char* path = std::getenv("FERRY_CUDA_DRIVER");
  if (path == nullptr || *path == '\0') path = "libcuda.so.1";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    out.status = Status::NotFound(std::string("no CUDA driver: dlopen(") + path +
                                  ") failed: " + (why ? why : "unknown error"));
    return out;
  }
  Driver& d = out.driver;
  const char* missing = nullptr;
  auto need = [&](const char* name, auto* fn) {
    if (!Bind(lib, name, fn) && missing == nullptr) missing = name;
  };
  need("cuInit", &d.Init);
  need("cuDriverGetVersion", &d.DriverGetVersion);
  need("cuDeviceGetCount", &d.DeviceGetCount);
  need("cuDeviceGet", &d.DeviceGet);
  need("cuDeviceGetName", &d.DeviceGetName);
  need("cuDeviceGetAttribute", &d.DeviceGetAttribute);
  need("cuDevicePrimaryCtxRetain", &d.DevicePrimaryCtxRetain);
  need("cuDevicePrimaryCtxRelease_v2", &d.DevicePrimaryCtxRelease);
  need("cuCtxPushCurrent_v2", &d.CtxPushCurrent);
  need("cuCtxPopCurrent_v2", &d.CtxPopCurrent);
  need("cuGetErrorName", &d.GetErrorName);
  need("cuGetErrorString", &d.GetErrorString);
  need("cuMemAlloc_v2", &d.MemAlloc);
  need("cuMemFree_v2", &d.MemFree);
  need("cuMemAllocHost_v2", &d.MemAllocHost);
  need("cuMemFreeHost", &d.MemFreeHost);
  need("cuMemAllocManaged", &d.MemAllocManaged);
  need("cuMemcpy", &d.Memcpy);
  need("cuMemcpyAsync", &d.MemcpyAsync);
  need("cuMemcpyPeerAsync", &d.MemcpyPeerAsync);
  need("cuStreamCreate", &d.StreamCreate);
  need("cuStreamDestroy_v2", &d.StreamDestroy);
  need("cuStreamSynchronize", &d.StreamSynchronize);
  need("cuStreamWaitEvent", &d.StreamWaitEvent);
  need("cuEventCreate", &d.EventCreate);
  need("cuEventDestroy_v2", &d.EventDestroy);
  need("cuEventRecord", &d.EventRecord);
  need("cuEventSynchronize", &d.EventSynchronize);
  need("cuEventQuery", &d.EventQuery);
  need("cuLaunchHostFunc", &d.LaunchHostFunc);
  need("cuPointerGetAttribute", &d.PointerGetAttribute);
  need("cuMemGetAddressRange_v2", &d.MemGetAddressRange);
  need("cuIpcGetMemHandle", &d.IpcGetMemHandle);
  need("cuIpcOpenMemHandle_v2", &d.IpcOpenMemHandle);
  need("cuIpcCloseMemHandle", &d.IpcCloseMemHandle);
  // Optional (driver 11.2+): stream-ordered memory is used only when both are there.
  if (!Bind(lib, "cuMemAllocAsync", &d.MemAllocAsync) ||
      !Bind(lib, "cuMemFreeAsync", &d.MemFreeAsync)) {
    d.MemAllocAsync = nullptr;
    d.MemFreeAsync = nullptr;
  }
  Bind(lib, "cuDeviceTotalMem_v2", &d.DeviceTotalMem);  // optional: only listings use it
  if (missing != nullptr) {
    out.status = Status::NotFound(std::string("the CUDA driver at ") + path + " lacks " + missing);
    return out;
  }
  CUresult rc = d.Init(0);
  if (rc != kSuccess)
    out.status = Error(d, rc, "cuInit").WithContext("CUDA driver found but unusable");
  if (!out.status.ok()) out.status = Status::NotFound(out.status.message());
  return out;
}

}  // namespace

Result<const Driver*> GetDriver() {
  static const Loaded loaded = LoadDriver();
  if (!loaded.status.ok()) return loaded.status;
  return &loaded.driver;
}

Status Error(const Driver& d, CUresult code, const char* call) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.GetErrorName == nullptr || d.GetErrorName(code, &name) != kSuccess) name = nullptr;
  if (d.GetErrorString == nullptr || d.GetErrorString(code, &text) != kSuccess) text = nullptr;
  return Status::IOError(std::string("cu") + call + ": " +
                         (name ? name : ("CUresult " + std::to_string(code)).c_str()) +
                         (text ? std::string(" (") + text + ")" : std::string()));
}

}  // namespace cuda

}  // namespace ferry::internal
