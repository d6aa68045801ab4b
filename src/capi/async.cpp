// The C face of the async stream adapters (ferry/capi/async.h).
#include "ferry/capi/async.h"

#include <chrono>
#include <memory>
#include <string>

#include "capi/error.hpp"
#include "ferry/device/async_stream.hpp"

using ferry::Status;

struct FerryAsyncProducer {
  std::unique_ptr<ferry::AsyncStreamProducer> producer;
};

FerryErrorCode FerryAsyncProducerFromStream(struct ArrowDeviceArrayStream* stream,
                                            struct ArrowAsyncDeviceStreamHandler* handler,
                                            struct FerryAsyncProducer** out,
                                            struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (stream == nullptr || stream->release == nullptr || out == nullptr) {
      return Status::Invalid(
          "FerryAsyncProducerFromStream: the stream is NULL or released, or "
          "out is NULL");
    }
    *out = nullptr;
    // Checked before the stream is taken, so a refused call leaves it with the caller.
    if (handler == nullptr || handler->on_schema == nullptr || handler->on_next_task == nullptr ||
        handler->on_error == nullptr || handler->release == nullptr) {
      return Status::Invalid(
          "FerryAsyncProducerFromStream: the handler is NULL or lacks a "
          "callback");
    }
    auto holder = std::make_unique<FerryAsyncProducer>();
    FERRY_ASSIGN_OR_RAISE(holder->producer,
                          ferry::ProduceAsync(ferry::UniqueDeviceArrayStream(stream), handler));
    *out = holder.release();
    return Status::OK();
  });
}

FerryErrorCode FerryAsyncProducerWait(struct FerryAsyncProducer* producer, int64_t timeout_ms,
                                      struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (producer == nullptr) return Status::Invalid("FerryAsyncProducerWait: producer is NULL");
    if (timeout_ms < 0) {
      return Status::Invalid("FerryAsyncProducerWait: timeout_ms must be >= 0, got " +
                             std::to_string(timeout_ms));
    }
    return producer->producer->Wait(std::chrono::milliseconds(timeout_ms));
  });
}

void FerryAsyncProducerCounters(const struct FerryAsyncProducer* producer, int64_t* requested,
                                int64_t* pulled, int64_t* delivered) {
  ferry::AsyncProducerCounters c;
  if (producer != nullptr) c = producer->producer->counters();
  if (requested != nullptr) *requested = c.requested;
  if (pulled != nullptr) *pulled = c.pulled;
  if (delivered != nullptr) *delivered = c.delivered;
}

void FerryAsyncProducerFree(struct FerryAsyncProducer* producer) { delete producer; }

FerryErrorCode FerryAsyncHandlerToStream(struct ArrowAsyncDeviceStreamHandler* handler,
                                         struct ArrowDeviceArrayStream* stream, int64_t queue_size,
                                         int wait_events, int64_t timeout_ms,
                                         struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (timeout_ms < 0) {
      return Status::Invalid("FerryAsyncHandlerToStream: timeout_ms must be >= 0, got " +
                             std::to_string(timeout_ms));
    }
    ferry::AsyncHandlerOptions options;
    options.queue_size = queue_size;
    options.wait_events = wait_events != 0;
    options.timeout = std::chrono::milliseconds(timeout_ms);
    return ferry::AsyncHandlerToStream(handler, stream, std::move(options));
  });
}
