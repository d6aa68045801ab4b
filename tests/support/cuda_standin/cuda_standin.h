/* The stand-in CUDA driver's own functions, beside the driver API it exports: counters of what
 * the process asked of the "GPU", the per-operation delay, and the count of other processes that
 * map an IPC-exported allocation. Tests find them with dlsym in the library that
 * $FERRY_CUDA_DRIVER names; the real driver has none of them. */
#ifndef FERRY_CUDA_STANDIN_H_
#define FERRY_CUDA_STANDIN_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Counts since the last reset, process-wide. A copy's direction is named by where its two sides
 * live: "d" is device or managed memory, "h" host memory (pinned or pageable). */
typedef struct FerryCudaStandinCounters {
  int64_t copies_h2d;
  int64_t copies_d2h;
  int64_t copies_d2d;
  int64_t copies_h2h;
  int64_t bytes_h2d;
  int64_t bytes_d2h;
  int64_t bytes_d2d;
  int64_t bytes_h2h;
  /* Copies with a pageable (not cuMemAllocHost) host side: the driver stages or blocks. */
  int64_t pageable_copies;
  /* Host waits asked for: cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize. */
  int64_t synchronizations;
  /* Host waits the driver makes by itself: synchronous cuMemcpy, a pageable copy (the stream
   * drains before a pageable source is staged; a pageable destination is written before the call
   * returns), cuMemFree/cuMemFreeHost with work still queued. */
  int64_t implicit_synchronizations;
  int64_t allocations_device; /* cuMemAlloc and cuMemAllocAsync */
  int64_t allocations_pinned; /* cuMemAllocHost */
  int64_t allocations_managed;
  int64_t frees;
  int64_t event_records;
  int64_t stream_waits; /* cuStreamWaitEvent calls on a recorded event */
  int64_t host_funcs;
  int64_t ipc_exports;
  int64_t ipc_opens;
  int64_t ipc_closes;
  /* Operations that failed on a stream (a copy touching freed memory): CUDA_ERROR_ILLEGAL_ADDRESS
   * on the stream from then on. */
  int64_t stream_errors;
} FerryCudaStandinCounters;

/* What the process holds now, for leak checks: each returns to zero when every allocation, stream,
 * event, IPC mapping and context retain has been given back. */
typedef struct FerryCudaStandinLive {
  int64_t device_allocations; /* cuMemAlloc, cuMemAllocAsync (not imported ones) */
  int64_t pinned_allocations; /* cuMemAllocHost */
  int64_t managed_allocations;
  int64_t ipc_mappings;    /* cuIpcOpenMemHandle minus cuIpcCloseMemHandle */
  int64_t streams;         /* cuStreamCreate minus cuStreamDestroy */
  int64_t events;          /* cuEventCreate minus cuEventDestroy */
  int64_t context_retains; /* cuDevicePrimaryCtxRetain minus Release, over every device */
} FerryCudaStandinLive;

/* Copy what the process holds now into `out`. */
void ferry_cuda_standin_live(FerryCudaStandinLive* out);
/* Copy the counters into `out`. */
void ferry_cuda_standin_counters(FerryCudaStandinCounters* out);
/* Zero the counters. */
void ferry_cuda_standin_reset_counters(void);
/* The delay each stream operation waits before it runs, in microseconds (initially
 * $FERRY_CUDA_STANDIN_DELAY_US, or 0). */
void ferry_cuda_standin_set_delay_us(int64_t us);
int64_t ferry_cuda_standin_delay_us(void);
/* Live allocations of each kind (device, pinned, managed; imported IPC mappings count as device).
 */
int64_t ferry_cuda_standin_live_allocations(void);
/* IPC handles this process has open (cuIpcOpenMemHandle minus cuIpcCloseMemHandle). */
int64_t ferry_cuda_standin_ipc_open_handles(void);
/* How many other processes map the device allocation that holds `dptr` (an exported block):
 * read from /proc, so a killed importer no longer counts once it is gone. -1 when `dptr` is not
 * device memory of this process. */
int64_t ferry_cuda_standin_ipc_importers(unsigned long long dptr);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_CUDA_STANDIN_H_ */
