// Async streams in tests: a device stream produced into ferry's own handler (ProduceAsync) and read
// back as a stream, so that a test reads what a consumer is handed and counts what was requested.
#pragma once

#include <cstdint>
#include <memory>

#include "ferry/abi/unique.hpp"
#include "ferry/device/async_stream.hpp"

namespace ferry::testing {

/// A source read through ferry's handler: `reader` is what the consumer reads, `producer` the
/// adapter driving the handler (its counters say what was requested and pulled).
struct AsyncRead {
  ArrowAsyncDeviceStreamHandler handler{};
  UniqueDeviceArrayStream reader;
  std::unique_ptr<AsyncStreamProducer> producer;
};

/// Start reading `source` through a handler that requests `queue_size` batches ahead.
inline Status StartAsyncRead(AsyncRead* r, UniqueDeviceArrayStream source, int64_t queue_size) {
  AsyncHandlerOptions options;
  options.queue_size = queue_size;
  FERRY_RETURN_NOT_OK(AsyncHandlerToStream(&r->handler, r->reader.get(), options));
  FERRY_ASSIGN_OR_RAISE(r->producer, ProduceAsync(std::move(source), &r->handler));
  return Status::OK();
}

}  // namespace ferry::testing
