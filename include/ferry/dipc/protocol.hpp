// The Dissociated IPC protocol's wire formats: metadata messages, body tags, buffer lists and
// free_data bodies. Pure encoding and decoding over caller-owned bytes; no I/O, no allocation
// beyond the returned values.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/transport/region.hpp"

namespace ferry::dipc {

/// Byte 0 of a metadata message. kFerryError is ferry's extension: a server's error, as UTF-8
/// text after the header (in `flatbuffer`); other implementations refuse it as an unknown type,
/// which ends their stream with an error too.
enum class MetadataType : uint8_t { kEndOfStream = 0, kIpcMessage = 1, kFerryError = 0xFF };

/// A decoded metadata message: its type, sequence number and (for kIpcMessage) the flatbuffer
/// Message bytes, which point into the input.
struct FERRY_EXPORT MetadataMessage {
  MetadataType type = MetadataType::kEndOfStream;
  uint32_t sequence = 0;
  std::span<const uint8_t> flatbuffer;
};

/// Size of the header before the flatbuffer: type byte + little-endian uint32 sequence number.
constexpr size_t kMetadataHeaderSize = 5;

/// Decode a metadata message. Errors: shorter than 5 bytes, an unknown type, an end-of-stream
/// message that is not exactly 5 bytes, an IPC message with no flatbuffer bytes.
FERRY_EXPORT Result<MetadataMessage> ParseMetadataMessage(std::span<const uint8_t> bytes);

/// Write the 5-byte header of a metadata message into `out` (the flatbuffer follows it).
FERRY_EXPORT void EncodeMetadataHeader(MetadataType type, uint32_t sequence,
                                       uint8_t out[kMetadataHeaderSize]);

/// Body type, in bits 56-63 of a body message's tag.
enum class BodyType : uint8_t { kPacked = 0, kBufferList = 1 };

/// Tag bits: the sequence number, the reserved bits (must be 0) and the body type.
constexpr uint64_t kSequenceMask = 0x00000000FFFFFFFFULL;
constexpr uint64_t kReservedMask = 0x00FFFFFF00000000ULL;
constexpr int kBodyTypeShift = 56;

/// The tag of sequence number `sequence`'s body of type `type`: `type << 56 | sequence`.
constexpr uint64_t MakeBodyTag(BodyType type, uint32_t sequence) {
  return (static_cast<uint64_t>(type) << kBodyTypeShift) | sequence;
}

/// A decoded body tag.
struct FERRY_EXPORT BodyTag {
  BodyType type = BodyType::kPacked;
  uint32_t sequence = 0;
};

/// Decode a body tag; reserved bits set or an unknown body type are errors naming the tag.
FERRY_EXPORT Result<BodyTag> ParseBodyTag(uint64_t tag);

/// One buffer of a type-1 body: the transport layer's reference to memory a peer may read.
using transport::BufferRef;

/// A type-1 body: the total size of all buffers, then the buffers.
struct FERRY_EXPORT BufferList {
  uint64_t total_size = 0;
  std::vector<BufferRef> buffers;
};

/// Decode a type-1 body. The byte count must be 16 + 16 x count, the lengths must sum to the
/// total (without overflow), and the count is bounded by the bytes present (no allocation a
/// lying count can inflate).
FERRY_EXPORT Result<BufferList> ParseBufferList(std::span<const uint8_t> bytes);

/// Encode a type-1 body (little-endian uint64s). `total_size` is recomputed from the buffers.
FERRY_EXPORT std::vector<uint8_t> EncodeBufferList(std::span<const BufferRef> buffers);

/// Decode a free_data body: one or more little-endian uint64 addresses or offsets.
FERRY_EXPORT Result<std::vector<uint64_t>> ParseFreeData(std::span<const uint8_t> bytes);

/// Encode a free_data body (a client may batch many addresses into one).
FERRY_EXPORT std::vector<uint8_t> EncodeFreeData(std::span<const uint64_t> addresses);

/// The tags a ferry server expects its requests on. Both have reserved bits set, so neither can
/// be mistaken for a body tag.
constexpr uint64_t kDefaultWantDataTag = 0x0000000100000000ULL;
constexpr uint64_t kDefaultFreeDataTag = 0x0000000200000000ULL;
/// The want_data tag of the data channel, in the two-connection shape (metadata and bodies on
/// separate connections, as the specification allows).
constexpr uint64_t kDefaultDataWantTag = 0x0000000300000000ULL;
/// How a two-connection client pairs its connections: both send the ticket followed by this
/// marker and the same random key (a ferry extension of the opaque ticket).
constexpr std::string_view kPairMarker{"\0ferry-pair=", 12};

}  // namespace ferry::dipc
