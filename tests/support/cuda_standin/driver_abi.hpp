// The CUDA driver ABI the stand-in implements: handle types, the constants it honours and the list
// of entry points with the real driver's exported names and signatures. Written from the driver
// API documentation; no NVIDIA header is needed to build it (signature_check.cpp compares the list
// with <cuda.h> where the toolkit is installed).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // NOLINT(google-runtime-int): the driver's type
using CUdevice_attribute = int;
using CUpointer_attribute = int;
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUhostFn = void (*)(void* user_data);
/// The driver's 64-byte opaque IPC memory handle.
struct CUipcMemHandle {
  char reserved[64];
};

}  // extern "C"

namespace standin {

// CUresult codes (the driver's numbering).
constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kNoDevice = 100;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kMapFailed = 205;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kNotFound = 500;
constexpr CUresult kNotReady = 600;
constexpr CUresult kIllegalAddress = 700;
constexpr CUresult kNotPermitted = 800;
constexpr CUresult kNotSupported = 801;
constexpr CUresult kUnknown = 999;

constexpr uintptr_t kStreamLegacy = 0x1;
constexpr uintptr_t kStreamPerThread = 0x2;
constexpr unsigned kStreamNonBlocking = 0x1;
constexpr unsigned kEventFlagsMask = 0x7;  // blocking sync, disable timing, interprocess
constexpr unsigned kMemAttachGlobal = 0x1;
constexpr unsigned kMemAttachHost = 0x2;
constexpr unsigned kIpcLazyEnablePeerAccess = 0x1;

// CUpointer_attribute values.
constexpr int kAttrContext = 1;
constexpr int kAttrMemoryType = 2;
constexpr int kAttrDevicePointer = 3;
constexpr int kAttrHostPointer = 4;
constexpr int kAttrBufferId = 7;
constexpr int kAttrIsManaged = 8;
constexpr int kAttrDeviceOrdinal = 9;
constexpr int kAttrIsLegacyIpcCapable = 10;
constexpr int kAttrRangeStartAddr = 11;
constexpr int kAttrRangeSize = 12;
constexpr int kAttrMapped = 13;
// CUmemorytype values.
constexpr unsigned kMemoryTypeHost = 1;
constexpr unsigned kMemoryTypeDevice = 2;

// CUdevice_attribute values the stand-in answers.
constexpr int kDevAttrUnifiedAddressing = 41;
constexpr int kDevAttrComputeCapabilityMajor = 75;
constexpr int kDevAttrComputeCapabilityMinor = 76;
constexpr int kDevAttrManagedMemory = 83;
constexpr int kDevAttrConcurrentManagedAccess = 89;
constexpr int kDevAttrMemoryPoolsSupported = 115;

}  // namespace standin

#include "entry_points.inc"
