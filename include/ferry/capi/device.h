/* ferry's C surface: devices, buffers and device arrays (docs/device.md).
 * One part of ferry/capi/ferry.h, which states the conventions every part follows; it may be
 * included alone. */
#ifndef FERRY_CAPI_DEVICE_H
#define FERRY_CAPI_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/capi/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* -- Devices (docs/device.md) ------------------------------------------------------------------
 * The functions of nanoarrow's device extension under the same names with Arrow replaced by
 * Ferry, each with a trailing `struct FerryError*`. Streams and events are pointers to the
 * native handle (`CUstream*`, `cl_command_queue*`; `CUevent*`, `cl_event*`). */

/** OK when ferry's device layer can run in this process (struct layouts match the spec). */
FERRY_EXPORT FerryErrorCode FerryDeviceCheckRuntime(struct FerryError* error);

/** The CPU device (owned by ferry; never NULL). */
FERRY_EXPORT struct FerryDevice* FerryDeviceCpu(void);

/** Fill `device` with a copy of the CPU device that the caller owns; its `release` marks it
 * released. */
FERRY_EXPORT void FerryDeviceInitCpu(struct FerryDevice* device);

/** The device for (type, id), owned by ferry: CPU, CUDA/CUDA_HOST/CUDA_MANAGED (GPU ordinal;
 * the driver is loaded at run time), OPENCL (ordinal among SVM devices) or EXT_DEV 0 (the
 * guarded test device). NULL when there is none; FerryDeviceResolveError then says why. */
FERRY_EXPORT struct FerryDevice* FerryDeviceResolve(ArrowDeviceType device_type, int64_t device_id);

/** The device a name spells ("cpu", "cuda:0", "cuda_host:1", "cuda_managed:0", "opencl:0",
 * "guarded:0"; any case; ":N" defaults to 0), owned by ferry: the same parser as the CLI's
 * --device and Python's ferry.Device.parse. NULL when the name is bad or the device absent;
 * FerryDeviceResolveError then says why. */
FERRY_EXPORT struct FerryDevice* FerryDeviceParse(const char* name);

/** Why the last FerryDeviceResolve or FerryDeviceParse on this thread returned NULL ("" after a
 * success). */
FERRY_EXPORT const char* FerryDeviceResolveError(void);

/** Free what `device` keeps for reuse and no work uses now (CUDA's pinned staging blocks), as
 * PyTorch's empty_cache does; `*freed_bytes` (may be NULL) gets the bytes freed. EINVAL for a
 * device struct ferry did not make. The C face of Device::ReleaseCached. */
FERRY_EXPORT FerryErrorCode FerryDeviceReleaseCached(struct FerryDevice* device,
                                                     int64_t* freed_bytes,
                                                     struct FerryError* error);

/** Wrap `array` (moved in) as `device_array` on `device`; a non-NULL `sync_event` is owned by
 * the result. `reserved` is zeroed. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayInit(struct FerryDevice* device,
                                                 struct ArrowDeviceArray* device_array,
                                                 struct ArrowArray* array, void* sync_event,
                                                 struct FerryError* error);

/** FerryDeviceArrayInit with a stream: given only a stream, an event is created, recorded on
 * it and owned by the result. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayInitAsync(struct FerryDevice* device,
                                                      struct ArrowDeviceArray* device_array,
                                                      struct ArrowArray* array, void* sync_event,
                                                      void* stream, struct FerryError* error);

/** Wrap `array_stream` (moved in) as a device stream whose arrays are labelled `device`. The
 * end of the stream stays an array with a NULL release. */
FERRY_EXPORT FerryErrorCode FerryDeviceBasicArrayStreamInit(
    struct ArrowDeviceArrayStream* device_array_stream, struct ArrowArrayStream* array_stream,
    struct FerryDevice* device, struct FerryError* error);

/** A view of a device array: its device (set by SetArray*) and the array view. Initialise with
 * FerryDeviceArrayViewInit, then FerryArrayViewInitFromSchema(&view.array_view, ...). */
struct FerryDeviceArrayView {
  struct FerryDevice* device;
  struct FerryArrayView array_view;
};

/** Zero `device_array_view`. */
FERRY_EXPORT void FerryDeviceArrayViewInit(struct FerryDeviceArrayView* device_array_view);

/** Free the view's private data (safe to repeat). */
FERRY_EXPORT void FerryDeviceArrayViewReset(struct FerryDeviceArrayView* device_array_view);

/** Point the view at `device_array` without reading any buffer. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayViewSetArrayMinimal(
    struct FerryDeviceArrayView* device_array_view, struct ArrowDeviceArray* device_array,
    struct FerryError* error);

/** Point the view at `device_array` and learn the data sizes with one device round trip,
 * using the device's internal stream. */
FERRY_EXPORT FerryErrorCode
FerryDeviceArrayViewSetArray(struct FerryDeviceArrayView* device_array_view,
                             struct ArrowDeviceArray* device_array, struct FerryError* error);

/** FerryDeviceArrayViewSetArray ordered on `stream` (required on devices with streams). */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayViewSetArrayAsync(
    struct FerryDeviceArrayView* device_array_view, struct ArrowDeviceArray* device_array,
    void* stream, struct FerryError* error);

/** Copy the visible part of the viewed array to `device_dst` (one allocation; complete on
 * return). `dst` is owned by the caller. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayViewCopy(struct FerryDeviceArrayView* src,
                                                     struct FerryDevice* device_dst,
                                                     struct ArrowDeviceArray* dst,
                                                     struct FerryError* error);

/** FerryDeviceArrayViewCopy ordered on `stream`; a device result owns an event recorded on it. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayViewCopyAsync(struct FerryDeviceArrayView* src,
                                                          struct FerryDevice* device_dst,
                                                          struct ArrowDeviceArray* dst,
                                                          void* stream, struct FerryError* error);

/** Move `src` to `device_dst` without copying; ENOTSUP (src untouched) when no zero-copy path
 * exists. */
FERRY_EXPORT FerryErrorCode FerryDeviceArrayMoveToDevice(struct ArrowDeviceArray* src,
                                                         struct FerryDevice* device_dst,
                                                         struct ArrowDeviceArray* dst,
                                                         struct FerryError* error);

/** Allocate `dst` on `device_dst` and copy `src` into it (complete on return). */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferInit(struct FerryDevice* device_src,
                                                  struct FerryBufferView src,
                                                  struct FerryDevice* device_dst,
                                                  struct FerryBuffer* dst,
                                                  struct FerryError* error);

/** FerryDeviceBufferInit ordered on `stream`. */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferInitAsync(struct FerryDevice* device_src,
                                                       struct FerryBufferView src,
                                                       struct FerryDevice* device_dst,
                                                       struct FerryBuffer* dst, void* stream,
                                                       struct FerryError* error);

/** Move `src` to `dst` without copying; ENOTSUP when not possible. */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferMove(struct FerryDevice* device_src,
                                                  struct FerryBuffer* src,
                                                  struct FerryDevice* device_dst,
                                                  struct FerryBuffer* dst,
                                                  struct FerryError* error);

/** Copy `src` into the existing, writable `dst` of the same size (complete on return). */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferCopy(struct FerryDevice* device_src,
                                                  struct FerryBufferView src,
                                                  struct FerryDevice* device_dst,
                                                  struct FerryMutableBufferView dst,
                                                  struct FerryError* error);

/** FerryDeviceBufferCopy ordered on `stream`. */
FERRY_EXPORT FerryErrorCode FerryDeviceBufferCopyAsync(struct FerryDevice* device_src,
                                                       struct FerryBufferView src,
                                                       struct FerryDevice* device_dst,
                                                       struct FerryMutableBufferView dst,
                                                       void* stream, struct FerryError* error);

/** Move the struct `src` into `dst` and mark `src` released. */
FERRY_EXPORT void FerryDeviceArrayMove(struct ArrowDeviceArray* src, struct ArrowDeviceArray* dst);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_CAPI_DEVICE_H */
