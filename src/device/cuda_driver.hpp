// The subset of the CUDA driver API ferry uses, resolved at run time from libcuda.so.1, so one
// build runs with or without a GPU. Types are declared here (they are the driver's stable ABI),
// so building needs no CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ferry/core/result.hpp"

namespace ferry::internal::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // NOLINT(google-runtime-int): the driver's type
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUhostFn = void (*)(void* user_data);
/// The driver's opaque 64-byte IPC memory handle (passed by value).
struct CUipcMemHandle {
  char reserved[64];
};

constexpr CUresult kSuccess = 0;
constexpr CUresult kNotReady = 600;
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDisableTiming = 2;
constexpr unsigned kMemAttachGlobal = 1;
constexpr int kPointerAttributeMemoryType = 2;
constexpr int kPointerAttributeIsManaged = 8;
constexpr unsigned kMemoryTypeHost = 1;
constexpr unsigned kIpcLazyEnablePeerAccess = 1;
constexpr int kDeviceAttributeUnifiedAddressing = 41;
constexpr int kDeviceAttributeMemoryPoolsSupported = 115;
constexpr int kDeviceAttributeComputeCapabilityMajor = 75;
constexpr int kDeviceAttributeComputeCapabilityMinor = 76;

/// Function pointers into the driver; every member is non-null once Load succeeded (the
/// optional ones may be null: cuMemAllocAsync and cuMemFreeAsync on drivers older than 11.2,
/// cuDeviceTotalMem_v2, which only listings use).
struct Driver {
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int*);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetName)(char*, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*DeviceTotalMem)(size_t*, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxPushCurrent)(CUcontext);
  CUresult (*CtxPopCurrent)(CUcontext*);
  CUresult (*GetErrorName)(CUresult, const char**);
  CUresult (*GetErrorString)(CUresult, const char**);
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemAllocAsync)(CUdeviceptr*, size_t, CUstream);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*MemAllocHost)(void**, size_t);
  CUresult (*MemFreeHost)(void*);
  CUresult (*MemAllocManaged)(CUdeviceptr*, size_t, unsigned);
  CUresult (*Memcpy)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*MemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*MemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
  CUresult (*StreamCreate)(CUstream*, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*EventCreate)(CUevent*, unsigned);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventQuery)(CUevent);
  CUresult (*LaunchHostFunc)(CUstream, CUhostFn, void*);
  CUresult (*PointerGetAttribute)(void*, int, CUdeviceptr);
  CUresult (*MemGetAddressRange)(CUdeviceptr*, size_t*, CUdeviceptr);
  CUresult (*IpcGetMemHandle)(CUipcMemHandle*, CUdeviceptr);
  CUresult (*IpcOpenMemHandle)(CUdeviceptr*, CUipcMemHandle, unsigned);
  CUresult (*IpcCloseMemHandle)(CUdeviceptr);
};

/// The driver, loaded and initialised once (thread-safe); NotFound with the reason (no
/// libcuda.so.1, a missing symbol, cuInit failing) otherwise. FERRY_CUDA_DRIVER overrides the
/// library path.
Result<const Driver*> GetDriver();

/// "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a failed call, EIO.
Status Error(const Driver& d, CUresult code, const char* call);

}  // namespace ferry::internal::cuda

/// Return an EIO status naming the call when a driver call fails.
#define FERRY_CUDA_CALL(driver, call)                                    \
  do {                                                                   \
    ::ferry::internal::cuda::CUresult _ferry_cu = (driver).call;         \
    if (_ferry_cu != ::ferry::internal::cuda::kSuccess)                  \
      return ::ferry::internal::cuda::Error((driver), _ferry_cu, #call); \
  } while (false)
