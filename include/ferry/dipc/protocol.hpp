// The Dissociated IPC protocol's wire formats: metadata messages, body tags, buffer lists and
// free_data bodies. Pure encoding and decoding over caller-owned bytes; no I/O, no allocation
// beyond the returned values.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/bytes.hpp"
#include "ferry/core/result.hpp"
#include "ferry/transport/region.hpp"

namespace ferry::dipc {

/// Byte 0 of a metadata message. kFerryError is ferry's extension: a server's error, as UTF-8
/// text after the header (in `flatbuffer`); other implementations refuse it as an unknown type,
/// which ends their stream with an error too.
enum class MetadataType : uint8_t { kEndOfStream = 0, kIpcMessage = 1, kFerryError = 0xFF };

/// A decoded metadata message: its type, sequence number and (for kIpcMessage) the flatbuffer
/// Message bytes, which point into the input (borrowed: valid as long as the input is).
struct FERRY_EXPORT MetadataMessage {
  MetadataType type = MetadataType::kEndOfStream;
  uint32_t sequence = 0;
  ByteSpan flatbuffer;
};

/// Size of the header before the flatbuffer: type byte + little-endian uint32 sequence number.
constexpr size_t kMetadataHeaderSize = 5;

/// Decode a metadata message. Errors: shorter than 5 bytes, an unknown type, an end-of-stream
/// message that is not exactly 5 bytes, an IPC message with no flatbuffer bytes.
FERRY_EXPORT Result<MetadataMessage> ParseMetadataMessage(ByteSpan bytes);

/// Write the 5-byte header of a metadata message into `out` (the flatbuffer follows it).
FERRY_EXPORT void EncodeMetadataHeader(MetadataType type, uint32_t sequence,
                                       uint8_t out[kMetadataHeaderSize]);

/// Body type, in bits 56-63 of a body message's tag.
enum class BodyType : uint8_t { kPacked = 0, kBufferList = 1 };

/// The one parser of body-type names, which every face uses (the CLI's --body-type, Python's
/// `body_type=`): "packed" (type 0) or "list" (type 1; also "buffer_list"). Anything else is
/// EINVAL with a message that lists them.
[[nodiscard]] FERRY_EXPORT Result<BodyType> ParseBodyType(std::string_view name);

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
FERRY_EXPORT Result<BufferList> ParseBufferList(ByteSpan bytes);
/// The same into `out`, whose vector's room is reused: a client parsing one list per batch
/// allocates only when a list is longer than any before it.
[[nodiscard]] FERRY_EXPORT Status ParseBufferList(ByteSpan bytes, BufferList* out);

/// Encode a type-1 body (little-endian uint64s). `total_size` is recomputed from the buffers.
FERRY_EXPORT std::vector<uint8_t> EncodeBufferList(std::span<const BufferRef> buffers);
/// The same into `out` (resized), whose room is reused: a server encoding one list per batch
/// allocates only for a list longer than any before it.
FERRY_EXPORT void EncodeBufferList(std::span<const BufferRef> buffers, std::vector<uint8_t>* out);

/// Decode a free_data body: one or more little-endian uint64 addresses or offsets.
FERRY_EXPORT Result<std::vector<uint64_t>> ParseFreeData(ByteSpan bytes);
/// The same into `out` (resized), whose room is reused: a server reading every free_data of a
/// client into one vector allocates only for a body longer than any before it.
[[nodiscard]] FERRY_EXPORT Status ParseFreeData(ByteSpan bytes, std::vector<uint64_t>* out);

/// Encode a free_data body (a client may batch many addresses into one).
FERRY_EXPORT std::vector<uint8_t> EncodeFreeData(std::span<const uint64_t> addresses);
/// The same into `out` (resized), whose room is reused: a client encoding every free_data into
/// one vector allocates only for a body longer than any before it.
FERRY_EXPORT void EncodeFreeData(std::span<const uint64_t> addresses, std::vector<uint8_t>* out);

/// ferry's credit message (an extension; only on connections with ferry's extensions): a tagged
/// message of 8 bytes, a little-endian uint64 count of record batches the server may send more.
/// A client that sends one before its want_data asks to be paced: the server then sends a record
/// batch only against a credit (its first message's count is the window it may send ahead). The
/// reserved bits are set, so the tag is never a protocol tag.
constexpr uint64_t kCreditTag = 0x00FE000000000002ULL;

/// ferry's stream-done message (an extension; only on a connection both ends agreed to reuse,
/// transport::Connection::reusable): an empty tagged message by which a client that read its
/// stream to the end, having been lent nothing, says it keeps the connection for another
/// want_data. Until then the server counts it as a client being served; after it, as idle.
constexpr uint64_t kStreamDoneTag = 0x00FE000000000003ULL;

/// Decode a credit body; errors name its size.
FERRY_EXPORT Result<uint64_t> ParseCredit(ByteSpan bytes);
/// Encode a credit body of `count` batches.
FERRY_EXPORT std::array<uint8_t, 8> EncodeCredit(uint64_t count);

/// What a want_data request asks for: both streams on one connection, or, in the split shape
/// (separate metadata and data servers), one of them. A ferry server tells them apart by the
/// want_data tag the request came with (each URI carries its own).
enum class Channel : uint8_t { kBoth = 0, kMetadata = 1, kData = 2 };

/// ferry's want_data tags are `base | region << 4 | channel`: `region` numbers the memory whose
/// remote_handle the URI carries (0: the server's shared region; each kept dataset has its own),
/// so the server knows which key the client holds. Clients treat them as opaque numbers.
constexpr uint64_t kDefaultWantDataTag = 0x0000000100000000ULL;
constexpr uint64_t kDefaultFreeDataTag = 0x0000000200000000ULL;
constexpr uint32_t kMaxRegions = 1U << 28;

/// The want_data tag of `region` and `channel` under `base`.
constexpr uint64_t MakeWantTag(uint64_t base, uint32_t region, Channel channel) {
  return base | (static_cast<uint64_t>(region) << 4) | static_cast<uint64_t>(channel);
}

/// A decoded want_data tag.
struct FERRY_EXPORT WantTag {
  uint32_t region = 0;
  Channel channel = Channel::kBoth;
};

/// Decode a want_data tag made under `base`; errors name a tag that is not one of them.
FERRY_EXPORT Result<WantTag> ParseWantTag(uint64_t base, uint64_t tag);

}  // namespace ferry::dipc
