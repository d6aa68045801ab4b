/* Layout pins for the Arrow C ABI structs, shared by the C and the C++ layout tests. Each
 * assertion states a size or field offset fixed by the Arrow specifications (64-bit systems),
 * or by ferry's own C ABI for its byte structs (a pointer, then the `size`; 0.2.0 renamed
 * fields but moved none). */
#ifndef FERRY_TESTS_ABI_LAYOUT_CHECK_H
#define FERRY_TESTS_ABI_LAYOUT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/abi/arrow_async_abi.h"
#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/device_abi.h"

#ifdef __cplusplus
#define FERRY_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
/* C99 has no _Static_assert: a negative array size fails the build instead. */
#define FERRY_SA_CAT2(a, b) a##b
#define FERRY_SA_CAT(a, b) FERRY_SA_CAT2(a, b)
#define FERRY_STATIC_ASSERT(cond, msg) \
  typedef char FERRY_SA_CAT(ferry_static_assert_, __LINE__)[(cond) ? 1 : -1]
#endif

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
FERRY_STATIC_ASSERT(sizeof(struct ArrowSchema) == 72, "ArrowSchema size");
FERRY_STATIC_ASSERT(offsetof(struct ArrowSchema, format) == 0, "ArrowSchema.format");
FERRY_STATIC_ASSERT(offsetof(struct ArrowSchema, name) == 8, "ArrowSchema.name");
FERRY_STATIC_ASSERT(offsetof(struct ArrowSchema, metadata) == 16, "ArrowSchema.metadata");
FERRY_STATIC_ASSERT(offsetof(struct ArrowSchema, flags) == 24, "ArrowSchema.flags");
FERRY_STATIC_ASSERT(offsetof(struct ArrowSchema, n_children) == 32, "ArrowSchema.n_children");
FERRY_STATIC_ASSERT(offsetof(struct ArrowSchema, children) == 40, "ArrowSchema.children");
FERRY_STATIC_ASSERT(offsetof(struct ArrowSchema, dictionary) == 48, "ArrowSchema.dictionary");
FERRY_STATIC_ASSERT(offsetof(struct ArrowSchema, release) == 56, "ArrowSchema.release");
FERRY_STATIC_ASSERT(offsetof(struct ArrowSchema, private_data) == 64, "ArrowSchema.private_data");

FERRY_STATIC_ASSERT(sizeof(struct ArrowArray) == 80, "ArrowArray size");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, length) == 0, "ArrowArray.length");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, null_count) == 8, "ArrowArray.null_count");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, offset) == 16, "ArrowArray.offset");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, n_buffers) == 24, "ArrowArray.n_buffers");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, n_children) == 32, "ArrowArray.n_children");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, buffers) == 40, "ArrowArray.buffers");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, children) == 48, "ArrowArray.children");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, dictionary) == 56, "ArrowArray.dictionary");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, release) == 64, "ArrowArray.release");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArray, private_data) == 72, "ArrowArray.private_data");

FERRY_STATIC_ASSERT(sizeof(struct ArrowDeviceArray) == 128, "ArrowDeviceArray size");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArray, array) == 0, "ArrowDeviceArray.array");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArray, device_id) == 80,
                    "ArrowDeviceArray.device_id");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArray, device_type) == 88,
                    "ArrowDeviceArray.device_type");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArray, sync_event) == 96,
                    "ArrowDeviceArray.sync_event");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArray, reserved) == 104,
                    "ArrowDeviceArray.reserved");

FERRY_STATIC_ASSERT(sizeof(struct ArrowArrayStream) == 40, "ArrowArrayStream size");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArrayStream, get_schema) == 0, "get_schema");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArrayStream, get_next) == 8, "get_next");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArrayStream, get_last_error) == 16, "get_last_error");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArrayStream, release) == 24, "release");
FERRY_STATIC_ASSERT(offsetof(struct ArrowArrayStream, private_data) == 32, "private_data");

FERRY_STATIC_ASSERT(sizeof(struct ArrowDeviceArrayStream) == 48, "ArrowDeviceArrayStream size");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArrayStream, device_type) == 0, "device_type");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArrayStream, get_schema) == 8, "get_schema");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArrayStream, get_next) == 16, "get_next");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArrayStream, get_last_error) == 24, "last_error");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArrayStream, release) == 32, "release");
FERRY_STATIC_ASSERT(offsetof(struct ArrowDeviceArrayStream, private_data) == 40, "private_data");

FERRY_STATIC_ASSERT(sizeof(struct ArrowAsyncTask) == 16, "ArrowAsyncTask size");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncTask, extract_data) == 0, "extract_data");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncTask, private_data) == 8, "private_data");

FERRY_STATIC_ASSERT(sizeof(struct ArrowAsyncProducer) == 40, "ArrowAsyncProducer size");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncProducer, device_type) == 0, "device_type");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncProducer, request) == 8, "request");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncProducer, cancel) == 16, "cancel");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncProducer, additional_metadata) == 24,
                    "additional_metadata");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncProducer, private_data) == 32, "private_data");

FERRY_STATIC_ASSERT(sizeof(struct ArrowAsyncDeviceStreamHandler) == 48,
                    "ArrowAsyncDeviceStreamHandler size");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, on_schema) == 0, "on_schema");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, on_next_task) == 8,
                    "on_next_task");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, on_error) == 16, "on_error");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, release) == 24, "release");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, producer) == 32, "producer");
FERRY_STATIC_ASSERT(offsetof(struct ArrowAsyncDeviceStreamHandler, private_data) == 40,
                    "private_data");

FERRY_STATIC_ASSERT(sizeof(struct FerryBufferView) == 16 &&
                        offsetof(struct FerryBufferView, size) == 8,
                    "FerryBufferView: data, size");
FERRY_STATIC_ASSERT(sizeof(struct FerryMutableBufferView) == 16 &&
                        offsetof(struct FerryMutableBufferView, size) == 8,
                    "FerryMutableBufferView: data, size");
FERRY_STATIC_ASSERT(sizeof(struct FerryBuffer) == 32 && offsetof(struct FerryBuffer, size) == 8 &&
                        offsetof(struct FerryBuffer, release) == 16 &&
                        offsetof(struct FerryBuffer, private_data) == 24,
                    "FerryBuffer: data, size, release, private_data");
#endif

FERRY_STATIC_ASSERT(sizeof(ArrowDeviceType) == 4, "ArrowDeviceType is int32_t");
FERRY_STATIC_ASSERT(ARROW_DEVICE_CPU == 1 && ARROW_DEVICE_CUDA == 2 &&
                        ARROW_DEVICE_CUDA_HOST == 3 && ARROW_DEVICE_OPENCL == 4 &&
                        ARROW_DEVICE_VULKAN == 7 && ARROW_DEVICE_METAL == 8 &&
                        ARROW_DEVICE_VPI == 9 && ARROW_DEVICE_ROCM == 10 &&
                        ARROW_DEVICE_ROCM_HOST == 11 && ARROW_DEVICE_EXT_DEV == 12 &&
                        ARROW_DEVICE_CUDA_MANAGED == 13 && ARROW_DEVICE_ONEAPI == 14 &&
                        ARROW_DEVICE_WEBGPU == 15 && ARROW_DEVICE_HEXAGON == 16,
                    "ARROW_DEVICE_* values");
FERRY_STATIC_ASSERT(ARROW_FLAG_DICTIONARY_ORDERED == 1 && ARROW_FLAG_NULLABLE == 2 &&
                        ARROW_FLAG_MAP_KEYS_SORTED == 4,
                    "ARROW_FLAG_* values");

#endif /* FERRY_TESTS_ABI_LAYOUT_CHECK_H */
