/* Layout pins for the DLPack 1.3 structs and the C exchange API table (64-bit systems), and the
 * values of the codes and flags the DLPack specification fixes. Shared by the C and the C++ layout
 * tests. */
#ifndef FERRY_TESTS_ABI_DLPACK_LAYOUT_CHECK_H
#define FERRY_TESTS_ABI_DLPACK_LAYOUT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/abi/dlpack_abi.h"
#include "layout_check.h"

/* layout_check.h's C99 assertion names its typedef by line, so these take another prefix. */
#ifdef __cplusplus
#define FERRY_DLPACK_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define FERRY_DLPACK_ASSERT(cond, msg) \
  typedef char FERRY_SA_CAT(ferry_dlpack_assert_, __LINE__)[(cond) ? 1 : -1]
#endif

FERRY_DLPACK_ASSERT(DLPACK_MAJOR_VERSION == 1 && DLPACK_MINOR_VERSION == 3, "DLPack 1.3");
FERRY_DLPACK_ASSERT(sizeof(DLPackVersion) == 8 && offsetof(DLPackVersion, minor) == 4,
                    "DLPackVersion: major, minor");
FERRY_DLPACK_ASSERT(sizeof(DLDevice) == 8 && offsetof(DLDevice, device_id) == 4,
                    "DLDevice: device_type, device_id");
FERRY_DLPACK_ASSERT(sizeof(DLDataType) == 4 && offsetof(DLDataType, bits) == 1 &&
                        offsetof(DLDataType, lanes) == 2,
                    "DLDataType: code, bits, lanes");

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
FERRY_DLPACK_ASSERT(sizeof(DLTensor) == 48, "DLTensor size");
FERRY_DLPACK_ASSERT(offsetof(DLTensor, device) == 8, "DLTensor.device");
FERRY_DLPACK_ASSERT(offsetof(DLTensor, ndim) == 16, "DLTensor.ndim");
FERRY_DLPACK_ASSERT(offsetof(DLTensor, dtype) == 20, "DLTensor.dtype");
FERRY_DLPACK_ASSERT(offsetof(DLTensor, shape) == 24, "DLTensor.shape");
FERRY_DLPACK_ASSERT(offsetof(DLTensor, strides) == 32, "DLTensor.strides");
FERRY_DLPACK_ASSERT(offsetof(DLTensor, byte_offset) == 40, "DLTensor.byte_offset");

FERRY_DLPACK_ASSERT(sizeof(DLManagedTensor) == 64, "DLManagedTensor size");
FERRY_DLPACK_ASSERT(offsetof(DLManagedTensor, manager_ctx) == 48, "DLManagedTensor.manager_ctx");
FERRY_DLPACK_ASSERT(offsetof(DLManagedTensor, deleter) == 56, "DLManagedTensor.deleter");

FERRY_DLPACK_ASSERT(sizeof(DLManagedTensorVersioned) == 80, "DLManagedTensorVersioned size");
FERRY_DLPACK_ASSERT(offsetof(DLManagedTensorVersioned, manager_ctx) == 8,
                    "DLManagedTensorVersioned.manager_ctx");
FERRY_DLPACK_ASSERT(offsetof(DLManagedTensorVersioned, deleter) == 16,
                    "DLManagedTensorVersioned.deleter");
FERRY_DLPACK_ASSERT(offsetof(DLManagedTensorVersioned, flags) == 24,
                    "DLManagedTensorVersioned.flags");
FERRY_DLPACK_ASSERT(offsetof(DLManagedTensorVersioned, dl_tensor) == 32,
                    "DLManagedTensorVersioned.dl_tensor");

FERRY_DLPACK_ASSERT(sizeof(DLPackExchangeAPIHeader) == 16 &&
                        offsetof(DLPackExchangeAPIHeader, prev_api) == 8,
                    "DLPackExchangeAPIHeader: version, prev_api");
FERRY_DLPACK_ASSERT(sizeof(DLPackExchangeAPI) == 56, "DLPackExchangeAPI size");
FERRY_DLPACK_ASSERT(offsetof(DLPackExchangeAPI, managed_tensor_allocator) == 16,
                    "DLPackExchangeAPI.managed_tensor_allocator");
FERRY_DLPACK_ASSERT(offsetof(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync) == 24,
                    "DLPackExchangeAPI.managed_tensor_from_py_object_no_sync");
FERRY_DLPACK_ASSERT(offsetof(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync) == 32,
                    "DLPackExchangeAPI.managed_tensor_to_py_object_no_sync");
FERRY_DLPACK_ASSERT(offsetof(DLPackExchangeAPI, dltensor_from_py_object_no_sync) == 40,
                    "DLPackExchangeAPI.dltensor_from_py_object_no_sync");
FERRY_DLPACK_ASSERT(offsetof(DLPackExchangeAPI, current_work_stream) == 48,
                    "DLPackExchangeAPI.current_work_stream");
#endif

FERRY_DLPACK_ASSERT(sizeof(DLDeviceType) == 4, "DLDeviceType is 32 bits");
FERRY_DLPACK_ASSERT(kDLCPU == 1 && kDLCUDA == 2 && kDLCUDAHost == 3 && kDLOpenCL == 4 &&
                        kDLVulkan == 7 && kDLMetal == 8 && kDLVPI == 9 && kDLROCM == 10 &&
                        kDLROCMHost == 11 && kDLExtDev == 12 && kDLCUDAManaged == 13 &&
                        kDLOneAPI == 14 && kDLWebGPU == 15 && kDLHexagon == 16 && kDLMAIA == 17 &&
                        kDLTrn == 18,
                    "kDL* device values");
FERRY_DLPACK_ASSERT(kDLInt == 0 && kDLUInt == 1 && kDLFloat == 2 && kDLOpaqueHandle == 3 &&
                        kDLBfloat == 4 && kDLComplex == 5 && kDLBool == 6,
                    "kDL* base type codes");
FERRY_DLPACK_ASSERT(kDLFloat8_e3m4 == 7 && kDLFloat8_e4m3 == 8 && kDLFloat8_e4m3b11fnuz == 9 &&
                        kDLFloat8_e4m3fn == 10 && kDLFloat8_e4m3fnuz == 11 &&
                        kDLFloat8_e5m2 == 12 && kDLFloat8_e5m2fnuz == 13 &&
                        kDLFloat8_e8m0fnu == 14 && kDLFloat6_e2m3fn == 15 &&
                        kDLFloat6_e3m2fn == 16 && kDLFloat4_e2m1fn == 17,
                    "kDLFloat8/6/4 codes (DLPack 1.1)");
FERRY_DLPACK_ASSERT(DLPACK_FLAG_BITMASK_READ_ONLY == 1 && DLPACK_FLAG_BITMASK_IS_COPIED == 2 &&
                        DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED == 4,
                    "DLPACK_FLAG_BITMASK_* values");

#endif /* FERRY_TESTS_ABI_DLPACK_LAYOUT_CHECK_H */
