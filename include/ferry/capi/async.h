/* ferry's C surface: the Async C Device Stream Interface (docs/device.md, "Async streams").
 * One part of ferry/capi/ferry.h, which states the conventions every part follows; it may be
 * included alone. */
#ifndef FERRY_CAPI_ASYNC_H
#define FERRY_CAPI_ASYNC_H

#include <stdint.h>

#include "ferry/abi/arrow_async_abi.h"
#include "ferry/capi/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A running async producer (opaque): a thread that pulls from a device stream and calls a
 * consumer's ArrowAsyncDeviceStreamHandler as its request(n) allows. Freed by
 * FerryAsyncProducerFree. */
struct FerryAsyncProducer;

/** Start producing `stream` (moved in; marked released) into `handler`, which the caller keeps
 * alive until its release is called; `*out` gets the producer. EINVAL when an argument is NULL
 * or the handler lacks a callback; every later failure reaches the handler's on_error (with
 * the code of ferry's error table and the message). Batches keep their sync_event. */
FERRY_EXPORT FerryErrorCode FerryAsyncProducerFromStream(
    struct ArrowDeviceArrayStream* stream, struct ArrowAsyncDeviceStreamHandler* handler,
    struct FerryAsyncProducer** out, struct FerryError* error);

/** Wait at most `timeout_ms` until the producer has released the handler: 0 after the end or a
 * cancel, the code on_error was given otherwise (its message in `error`); ETIMEDOUT while it
 * still runs. */
FERRY_EXPORT FerryErrorCode FerryAsyncProducerWait(struct FerryAsyncProducer* producer,
                                                   int64_t timeout_ms, struct FerryError* error);

/** The producer's counts so far (any pointer may be NULL): batches requested by the consumer,
 * pulled from the stream, and handed to on_next_task. `pulled` never exceeds `requested`. */
FERRY_EXPORT void FerryAsyncProducerCounters(const struct FerryAsyncProducer* producer,
                                             int64_t* requested, int64_t* pulled,
                                             int64_t* delivered);

/** Cancel (if still running), wait for the handler's release, and free `producer` (NULL is a
 * no-op). A stream blocked in its own get_next is waited for. */
FERRY_EXPORT void FerryAsyncProducerFree(struct FerryAsyncProducer* producer);

/** Fill `handler` (for any producer to call) and `stream` (to read from) as a pair: get_schema
 * and get_next wait at most `timeout_ms` for the producer; `queue_size` (>= 1) batches are
 * requested ahead and one more per batch read. Releasing the stream early cancels the producer.
 * With `wait_events` non-zero each batch's sync_event is waited on (host) before get_next
 * returns it. */
FERRY_EXPORT FerryErrorCode FerryAsyncHandlerToStream(struct ArrowAsyncDeviceStreamHandler* handler,
                                                      struct ArrowDeviceArrayStream* stream,
                                                      int64_t queue_size, int wait_events,
                                                      int64_t timeout_ms, struct FerryError* error);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_CAPI_ASYNC_H */
