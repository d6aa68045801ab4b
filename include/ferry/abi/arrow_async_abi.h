/* The Arrow Async C Device Stream Interface: ArrowAsyncTask, ArrowAsyncProducer and
 * ArrowAsyncDeviceStreamHandler (EXPERIMENTAL in Arrow).
 *
 * These declarations follow the Arrow specification field for field, under its own include guard
 * (ARROW_C_ASYNC_STREAM_INTERFACE, as in Arrow's arrow/c/abi.h), so this header coexists with any
 * other project's copy of the same structs. It compiles as C99 and as C++.
 */
#ifndef FERRY_ABI_ARROW_ASYNC_ABI_H
#define FERRY_ABI_ARROW_ASYNC_ABI_H

#include <stdint.h>

#include "ferry/abi/arrow_c_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ARROW_C_ASYNC_STREAM_INTERFACE
#define ARROW_C_ASYNC_STREAM_INTERFACE

/* EXPERIMENTAL in Arrow. One batch a producer has ready, handed to the consumer's on_next_task.
 * The struct itself lives only for that call; a consumer that keeps it copies it. */
struct ArrowAsyncTask {
  /* Move the batch into `out` (the consumer owns it then); call exactly once, which also frees
   * what the task holds. Returns 0 or an errno-compatible code (then on_error follows). */
  int (*extract_data)(struct ArrowAsyncTask* self, struct ArrowDeviceArray* out);

  /* Opaque task-specific data */
  void* private_data;
};

/* EXPERIMENTAL in Arrow. The consumer's controls over one stream: owned by the producer, valid
 * until the producer calls the handler's release. */
struct ArrowAsyncProducer {
  /* The device type of every array this stream produces. */
  ArrowDeviceType device_type;

  /* Allow `n` (> 0) more batches. Never calls on_next_task from inside itself; a no-op after
   * cancel. */
  void (*request)(struct ArrowAsyncProducer* self, int64_t n);

  /* Ask the producer to stop (idempotent, thread-safe); it then calls release, not on_error. */
  void (*cancel)(struct ArrowAsyncProducer* self);

  /* NULL, or metadata encoded as ArrowSchema.metadata is, valid for this object's life. */
  const char* additional_metadata;

  /* Opaque producer-specific data */
  void* private_data;
};

/* EXPERIMENTAL in Arrow. Made by the consumer and handed to a producer, which calls it: first
 * on_schema (or on_error), then on_next_task per batch and with NULL at the end, then release. */
struct ArrowAsyncDeviceStreamHandler {
  /* The stream's schema (the handler takes it); the producer has set `producer` before. */
  int (*on_schema)(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowSchema* stream_schema);

  /* A batch is ready (`task`), or the stream ended (`task` NULL). A non-zero return stops it. */
  int (*on_next_task)(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowAsyncTask* task,
                      const char* metadata);

  /* The stream failed with an errno-compatible `code`; strings live for the call only. */
  void (*on_error)(struct ArrowAsyncDeviceStreamHandler* self, int code, const char* message,
                   const char* metadata);

  /* Release callback: the producer's last call on this handler. */
  void (*release)(struct ArrowAsyncDeviceStreamHandler* self);

  /* Set by the producer before any callback but release; valid until release. */
  struct ArrowAsyncProducer* producer;

  /* Opaque handler-specific data */
  void* private_data;
};

#endif /* ARROW_C_ASYNC_STREAM_INTERFACE */

#ifdef __cplusplus
}
#endif

#endif /* FERRY_ABI_ARROW_ASYNC_ABI_H */
