/* ferry's device ABI: the C structs behind the device layer (FerryDevice, FerryBuffer,
 * FerryBufferView, FerryMutableBufferView) and the error struct every fallible C call fills.
 * A length is `size`, in bytes, in every one of them.
 *
 * FerryDevice has the fields and callbacks of nanoarrow's ArrowDevice, in the same order, with
 * two deliberate differences: every callback takes a `struct FerryError*` (NULL allowed), so a
 * driver's message reaches the caller instead of being dropped; and `buffer_copy` writes into a
 * FerryMutableBufferView where nanoarrow passes its read-only ArrowBufferView (the same layout,
 * a pointer and an int64_t, so the destination's type says it is written).
 */
#ifndef FERRY_ABI_DEVICE_ABI_H
#define FERRY_ABI_DEVICE_ABI_H

#include <stdint.h>

#include "ferry/abi/arrow_c_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Holds the message of the last failure of a call it was passed to. Lives on the caller's
 * stack; never needs releasing. */
struct FerryError {
  char message[1024];
};

/** A non-owning, read-only view of `size` bytes at `data`, in the memory of whichever device
 * the call names. */
struct FerryBufferView {
  const void* data;
  int64_t size;
};

/** A non-owning view of `size` bytes at `data` that a call writes into (a copy's destination),
 * in the memory of whichever device the call names. */
struct FerryMutableBufferView {
  void* data;
  int64_t size;
};

/** An owned buffer of `size` bytes on some device (host memory for the bytes ferry makes,
 * such as FerryIpcWriteBuffer's). `release` frees `data` (through whatever allocated it) and
 * marks the buffer released by setting `release` to NULL; a released or zeroed buffer owns
 * nothing. Move it by copying the struct and setting the source's `release` to NULL. */
struct FerryBuffer {
  uint8_t* data;
  int64_t size;
  void (*release)(struct FerryBuffer* buffer);
  void* private_data;
};

/** A device: its Arrow device type and id, and the callbacks that allocate, copy, move and
 * synchronize its memory. Streams are passed as a pointer to the native handle (`CUstream*`,
 * `cl_command_queue*`), events likewise (`CUevent*`, `cl_event*`), as the Arrow C Device Data
 * Interface specifies. Callbacks that move data between two devices are tried on the destination
 * device first and then on the source; each returns ENOTSUP for a pair it does not handle.
 * Devices returned by ferry are owned by ferry and live until the process exits; `release` is
 * for devices a caller initialised itself (FerryDeviceInitCpu). */
struct FerryDevice {
  ArrowDeviceType device_type;
  int64_t device_id;
  /** Wrap `array` (moved in; marked released on success) into `device_array` on this device.
   * A given `sync_event` is owned by the result; given only a stream, an event is created and
   * recorded on it. */
  int (*array_init)(struct FerryDevice* device, struct ArrowDeviceArray* device_array,
                    struct ArrowArray* array, void* sync_event, void* stream,
                    struct FerryError* error);
  /** Move `src` to `dst` without copying buffers; ENOTSUP when the memory is not reachable. */
  int (*array_move)(struct FerryDevice* device_src, struct ArrowDeviceArray* src,
                    struct FerryDevice* device_dst, struct ArrowDeviceArray* dst,
                    struct FerryError* error);
  /** Allocate `dst` on `device_dst` and copy `src` into it, ordered on `stream`. */
  int (*buffer_init)(struct FerryDevice* device_src, struct FerryBufferView src,
                     struct FerryDevice* device_dst, struct FerryBuffer* dst, void* stream,
                     struct FerryError* error);
  /** Move `src` to `dst` without copying; ENOTSUP when not possible. */
  int (*buffer_move)(struct FerryDevice* device_src, struct FerryBuffer* src,
                     struct FerryDevice* device_dst, struct FerryBuffer* dst,
                     struct FerryError* error);
  /** Copy `src` into the existing `dst` (same size), ordered on `stream`. */
  int (*buffer_copy)(struct FerryDevice* device_src, struct FerryBufferView src,
                     struct FerryDevice* device_dst, struct FerryMutableBufferView dst,
                     void* stream, struct FerryError* error);
  /** Event and stream: the stream waits on the event. Event only: the host waits on it. Stream
   * only: the host waits for the stream to drain. Neither: nothing to do. */
  int (*synchronize_event)(struct FerryDevice* device, void* sync_event, void* stream,
                           struct FerryError* error);
  /** Free what the device owns; NULL for devices owned by ferry. */
  void (*release)(struct FerryDevice* device);
  void* private_data;
};

#ifdef __cplusplus
}
#endif

#endif /* FERRY_ABI_DEVICE_ABI_H */
