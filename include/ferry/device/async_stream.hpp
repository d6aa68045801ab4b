// The Async C Device Stream Interface (ArrowAsyncDeviceStreamHandler, ArrowAsyncProducer,
// ArrowAsyncTask): a producer that drives any consumer's handler from a pull-based ferry source,
// and handlers that feed a pull-based stream or callbacks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "ferry/abi/arrow_async_abi.h"
#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/clock.hpp"
#include "ferry/core/result.hpp"
#include "ferry/core/stream_adapter.hpp"

namespace ferry {

/// What an async producer has done so far: batches the consumer requested (the sum of every
/// request(n)), pulled from the source, and handed to on_next_task. `pulled - requested` never
/// exceeds 0: the producer reads a batch only once one is requested.
struct AsyncProducerCounters {
  int64_t requested = 0;
  int64_t pulled = 0;
  int64_t delivered = 0;
  bool cancelled = false;
};

/// A running async producer: a thread of its own that pulls from a ferry source and calls the
/// consumer's handler (on_schema, then on_next_task per batch as request(n) allows, NULL at the
/// end, also after a cancel; on_error with the errno-style code of ferry's error table and the
/// message on failure; release last). Destroying it cancels the stream and joins the thread, so it
/// lives until the handler is released; a source blocked in its own read is waited for (it is not
/// interrupted).
class FERRY_EXPORT AsyncStreamProducer {
 public:
  struct FERRY_HIDDEN Impl;
  explicit AsyncStreamProducer(std::shared_ptr<Impl> state);
  ~AsyncStreamProducer();
  AsyncStreamProducer(const AsyncStreamProducer&) = delete;
  AsyncStreamProducer& operator=(const AsyncStreamProducer&) = delete;

  /// Wait, at most `limit` by `clock`, until the handler has been released: OK after the end of
  /// the stream or a cancel, the error on_error was given otherwise (the source's, or the
  /// consumer's refusal). DeadlineExceeded while it still runs.
  [[nodiscard]] Status Wait(std::chrono::milliseconds limit,
                            const std::shared_ptr<Clock>& clock = Clock::Real());
  /// Cancel as the consumer's cancel() does (idempotent).
  void Cancel();
  /// A snapshot of the counters.
  AsyncProducerCounters counters() const;

 private:
  std::shared_ptr<Impl> state_;
};

/// Start producing `source` (moved in) into `handler`, whose struct the caller keeps alive until
/// its release is called. Fails only when `handler` is NULL or lacks a callback; every later
/// failure (a released source, a read error) reaches on_error. Batches keep their sync_event:
/// the consumer waits on it before reading. No copy of any buffer.
FERRY_EXPORT Result<std::unique_ptr<AsyncStreamProducer>> ProduceAsync(
    UniqueDeviceArrayStream source, ArrowAsyncDeviceStreamHandler* handler);
/// The same over a C++ source whose arrays are on `device_type`.
FERRY_EXPORT Result<std::unique_ptr<AsyncStreamProducer>> ProduceAsync(
    std::unique_ptr<DeviceArrayProducer> source, ArrowDeviceType device_type,
    ArrowAsyncDeviceStreamHandler* handler);

/// How a ferry handler consumes an async stream.
struct AsyncHandlerOptions {
  /// Batches requested ahead (the first request(n)); one more is requested as each is consumed,
  /// so at most this many wait in the handler's queue. At least 1.
  int64_t queue_size = 4;
  /// Wait on each batch's sync_event (on the host) before handing it on, so the sink reads
  /// ready bytes. Off, the event travels on with the array for the sink to wait on.
  bool wait_events = false;
  /// The longest a pull-based read waits for the producer's next call (get_schema, get_next):
  /// DeadlineExceeded then.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::shared_ptr<Clock> clock = Clock::Real();
};

/// Fill `*handler` (for a producer to call) and `*stream` (for any ferry sink to pull from) as
/// one pair: the stream's get_schema and get_next wait for the producer's calls; each batch
/// read requests the next. Releasing the stream before the end cancels the producer and frees
/// the batches queued; on_error's code becomes the StatusCode the error table gives it, with
/// the producer's message. Both structs own a share of one state, freed with the last.
FERRY_EXPORT Status AsyncHandlerToStream(ArrowAsyncDeviceStreamHandler* handler,
                                         ArrowDeviceArrayStream* stream,
                                         AsyncHandlerOptions options = {});

/// A push sink for AsyncHandlerToCallbacks, called on the producer's thread, one call at a time.
/// A non-OK Status from any of them cancels the stream (reported to the producer as its code).
struct AsyncSinkCallbacks {
  /// The schema (owned by the callee).
  std::function<Status(UniqueSchema)> on_schema;
  /// One batch (owned by the callee; its event already waited on with wait_events).
  std::function<Status(UniqueDeviceArray)> on_batch;
  /// The end: OK, or the producer's error. Called once, before the handler is released.
  std::function<void(const Status&)> on_end;
};

/// Fill `*handler` so that the producer's calls reach `sink`; flow control as for
/// AsyncHandlerToStream (queue_size ahead, one more per batch). `options.timeout` is unused.
FERRY_EXPORT Status AsyncHandlerToCallbacks(ArrowAsyncDeviceStreamHandler* handler,
                                            AsyncSinkCallbacks sink,
                                            AsyncHandlerOptions options = {});

}  // namespace ferry
