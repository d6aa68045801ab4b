// Internal to the flight layer: FlightData's protobuf framing, written and read by hand so that
// bodies travel as gRPC slices over the batches' own memory (out) and over gRPC's receive
// buffers (in), never through a protobuf `bytes` field.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "ferry/core/bytes.hpp"
#include "ferry/core/result.hpp"
#include "ferry/ipc/sink.hpp"

namespace ferry::flight::internal {

/// FlightData's field numbers (Flight.proto).
inline constexpr uint32_t kDescriptorField = 1;
inline constexpr uint32_t kDataHeaderField = 2;
inline constexpr uint32_t kAppMetadataField = 3;
inline constexpr uint32_t kDataBodyField = 1000;

/// Body pieces smaller than this are copied into the framing rather than lent as slices of
/// their own (a slice costs an allocation and a reference count; a 100-byte copy costs less).
inline constexpr int64_t kSmallPiece = 4096;

/// Encode one IPC message as a FlightData message: `descriptor` (a serialized FlightDescriptor,
/// or empty), the flatbuffer header and the body. When `message.in_place`, body pieces become
/// slices over their own memory, each holding `keep_alive` until gRPC releases it; otherwise
/// (the writer's own copies, valid only during this call) they are copied.
grpc::ByteBuffer EncodeFlightData(const ipc::EncodedMessage& message,
                                  const std::shared_ptr<const void>& keep_alive,
                                  const std::string& descriptor = {});

/// A FlightData message as received: the fields ferry reads. `body` references gRPC's receive
/// buffer when it lies in one slice, and is one aligned copy otherwise.
struct FlightDataView {
  std::string descriptor;  // serialized FlightDescriptor, empty when absent
  bool has_descriptor = false;
  std::string header;  // the flatbuffer Message
  std::string app_metadata;
  SharedBytes body;
  /// Bytes of the whole message on the wire.
  int64_t wire_bytes = 0;
};

/// Parse FlightData from gRPC's buffer. Errors name the field and the offset that is wrong (a
/// truncated varint, a length beyond the message, a wire type protobuf does not have).
Result<FlightDataView> DecodeFlightData(const grpc::ByteBuffer& buffer);

/// Append a protobuf varint.
void PutVarint(std::string* out, uint64_t value);

}  // namespace ferry::flight::internal
