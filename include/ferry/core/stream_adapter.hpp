// The one adapter between the C stream structs (ArrowArrayStream, ArrowDeviceArrayStream) and
// C++: a StreamProducer exported as a C stream, and Status-returning calls into any C stream.
#pragma once

#include <memory>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/status.hpp"

namespace ferry {

/// A C++ source of batches (Item is ArrowArray or ArrowDeviceArray), exported as a C stream by
/// ExportArrayStream or ExportDeviceArrayStream. The stream owns the producer; its callbacks are
/// called from one thread at a time, as the C stream interface requires.
template <typename Item>
class StreamProducer {
 public:
  virtual ~StreamProducer() = default;
  /// Fill `*out` (a released struct) with the stream's schema; the caller owns it.
  [[nodiscard]] virtual Status GetSchema(ArrowSchema* out) = 0;
  /// Fill `*out` (a released struct) with the next item, or leave it released at the end.
  [[nodiscard]] virtual Status GetNext(Item* out) = 0;
};

using ArrayProducer = StreamProducer<ArrowArray>;
using DeviceArrayProducer = StreamProducer<ArrowDeviceArray>;

/// An ArrowArrayStream over `producer`. A failing call returns the Status's errno-style code,
/// and get_last_error its message until the next call. Releasing the stream destroys the
/// producer. One allocation.
FERRY_EXPORT UniqueArrayStream ExportArrayStream(std::unique_ptr<ArrayProducer> producer);
/// An ArrowDeviceArrayStream over `producer`, whose arrays are on `device_type`.
FERRY_EXPORT UniqueDeviceArrayStream
ExportDeviceArrayStream(std::unique_ptr<DeviceArrayProducer> producer, ArrowDeviceType device_type);

/// Call `stream`'s get_schema. A NULL or released stream or a released schema is an error; a
/// non-zero code is returned with get_last_error's text unchanged (or, with none, the call and
/// the code's strerror). The stream is borrowed.
FERRY_EXPORT Status StreamGetSchema(ArrowArrayStream* stream, ArrowSchema* out);
FERRY_EXPORT Status StreamGetSchema(ArrowDeviceArrayStream* stream, ArrowSchema* out);
/// Call `stream`'s get_next; `*out` is released at the end of the stream. Errors as above.
FERRY_EXPORT Status StreamGetNext(ArrowArrayStream* stream, ArrowArray* out);
FERRY_EXPORT Status StreamGetNext(ArrowDeviceArrayStream* stream, ArrowDeviceArray* out);

}  // namespace ferry
