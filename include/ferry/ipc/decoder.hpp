// The IPC push decoder: fed bytes, it yields schema, dictionary and record-batch messages. It
// does no I/O, so files, sockets, shared memory and the dissociated protocol all plug into it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/bytes.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/metadata.hpp"

namespace ferry::ipc {

/// Limits and checks for reading untrusted IPC input. Plain values; the defaults suit files and
/// streams from other processes.
struct FERRY_EXPORT ReadOptions {
  /// Validation run on every dictionary and record batch after its buffers were bounds-checked.
  /// kNone skips it (the structural checks on offsets, lengths and counts always run).
  ValidationLevel validation = ValidationLevel::kFull;
  /// The most bytes decompression may allocate for one message.
  int64_t max_decompressed_bytes = int64_t{1} << 32;
  /// The largest metadata flatbuffer accepted.
  int64_t max_metadata_bytes = int64_t{64} << 20;
  /// Flatbuffers Verifier limits: nesting depth and number of tables per message.
  int32_t max_flatbuffer_depth = 128;
  int32_t max_flatbuffer_tables = 1000000;
  /// The deepest type nesting accepted in a schema.
  int32_t max_type_depth = 64;
  /// Bodies are device memory the host must not read (CUDA IPC bodies): only the structural
  /// checks run (`validation` is not applied), and what would read body bytes on the host is
  /// refused with an error: a compressed body, a big-endian stream, a misaligned body, a
  /// dictionary delta.
  bool body_on_device = false;
  /// The columns to decode, as indices into the stream's schema in increasing order; empty:
  /// every column. The others' field nodes and buffers are stepped over, neither read nor
  /// checked; batches and schema() hold only these columns, and a dictionary batch that only the
  /// others use is skipped. A reader of lent buffers fetches only what BuffersNeeded names.
  std::vector<int32_t> columns;
};

/// The metadata version a stream declared. ferry reads V4 and V5 and writes V5.
enum class MetadataVersion : int16_t { kV1 = 0, kV2 = 1, kV3 = 2, kV4 = 3, kV5 = 4 };

/// What a decoded message was.
enum class MessageKind : int8_t { kSchema, kDictionary, kRecordBatch, kEndOfStream };

/// One decoded message. For a record batch, `batch` is a struct array (one child per column)
/// whose buffers point into the bytes the decoder was fed and keep them alive.
struct FERRY_EXPORT DecodedMessage {
  MessageKind kind = MessageKind::kEndOfStream;
  /// The message's position in the stream, from 0 (the schema).
  int64_t index = 0;
  /// The message-level custom metadata.
  Metadata custom_metadata;
  /// For dictionaries: the id and whether it was a delta.
  int64_t dictionary_id = -1;
  bool is_delta = false;
  /// For record batches: the batch, as a struct array.
  UniqueArray batch;
  /// The body's size in bytes and its codec ("" when uncompressed, "LZ4_FRAME" or "ZSTD").
  int64_t body_length = 0;
  std::string compression;
};

class FileReader;

/// Where one body buffer of a message lies in some region of memory, for bodies whose buffers are
/// not packed at the metadata's offsets (the dissociated protocol's body type 1).
struct FERRY_EXPORT BufferLocation {
  int64_t offset = 0;
  int64_t length = 0;
};

/// What a Message flatbuffer is, read without decoding it: its kind (a schema, a dictionary or
/// a record batch; anything else is an error) and the body length it announces.
struct FERRY_EXPORT MessageInfo {
  MessageKind kind = MessageKind::kSchema;
  int64_t body_length = 0;
};

/// Verify a Message flatbuffer and say what it is (bytes not 8-aligned are copied first;
/// metadata is small). Errors name a flatbuffer that is not a valid Message, a negative length,
/// or a message kind a stream cannot hold (Tensor, SparseTensor).
FERRY_EXPORT Result<MessageInfo> InspectMessage(ByteSpan flatbuffer);

/// What Decoder::Inspect found in a message's metadata, and the decoder's own verified copy of
/// it (8-aligned). Passed on to the decoder's next ConsumeMessage or ConsumeMessageBuffers as
/// their metadata, the copy is decoded without being copied or verified again. Valid until the
/// decoder's next call.
struct FERRY_EXPORT InspectedMessage {
  MessageInfo info;
  ByteSpan metadata;
};

/// The body length a Message flatbuffer announces, after verifying it (bytes not 8-aligned are
/// copied first; metadata is small). Lets a transport size a receive before the body arrives.
/// Errors name a flatbuffer that is not a valid Message, or a negative length.
FERRY_EXPORT Result<int64_t> MessageBodyLength(ByteSpan flatbuffer);

/// A push decoder for the Arrow IPC stream format. Feed it bytes with Consume in pieces of any
/// size; it reports how many it needs next and queues decoded messages for Next. A message body
/// that arrives whole inside one Consume call is referenced in place (no copy); bodies split over
/// calls are gathered into one owned buffer first. Not thread-safe; move-only.
class FERRY_EXPORT Decoder {
 public:
  explicit Decoder(ReadOptions options = {});
  ~Decoder();
  Decoder(Decoder&&) noexcept;
  Decoder& operator=(Decoder&&) noexcept;
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  /// Feed stream bytes. Decodes every message they complete; on error the decoder stops and
  /// returns the same error from every later call. Errors name the message number, the field and
  /// the buffer.
  [[nodiscard]] Status Consume(const SharedBytes& bytes);
  /// Decode one message whose metadata (a flatbuffer Message, without prefix) and body arrived
  /// separately, as in the dissociated protocol. The metadata is read during the call (the
  /// decoder keeps its own copy); the body is referenced, never copied, and kept alive by the
  /// arrays.
  [[nodiscard]] Status ConsumeMessage(ByteSpan metadata, const SharedBytes& body);

  /// Verify a message's metadata with this decoder's limits and say what it is, as
  /// InspectMessage does, keeping the verified copy: a reader that must know a message's kind
  /// and body length before its body arrives then copies and verifies the metadata once, not
  /// twice. Errors stop the decoder, as a failed ConsumeMessage does.
  Result<InspectedMessage> Inspect(ByteSpan metadata);

  /// Decode one message whose body buffers lie at `buffers` (one per buffer of the metadata, in
  /// order) inside `region` rather than packed. Each must lie inside the region, start 8-aligned
  /// and have the length the metadata gives; errors name the buffer. No copy: the arrays
  /// reference `region`.
  [[nodiscard]] Status ConsumeMessageBuffers(ByteSpan metadata, const SharedBytes& region,
                                             std::span<const BufferLocation> buffers);

  /// Which body buffers of a message (a Message flatbuffer without prefix) decoding will read:
  /// one flag per buffer its metadata lists, all set unless ReadOptions::columns leaves some
  /// out (none for a dictionary only other columns use). Needs the schema first; does not change
  /// the decoder. ConsumeMessageBuffers ignores the locations of buffers not needed, so a
  /// reader of lent buffers fetches only these. Errors name a bad message.
  Result<std::vector<bool>> BuffersNeeded(ByteSpan metadata) const;

  /// How many more bytes the decoder needs before it can decode anything more (0 once the
  /// stream ended or failed).
  int64_t next_required_size() const noexcept;
  /// The next decoded message, or nullopt when none is waiting.
  std::optional<DecodedMessage> Next();

  /// The stream's schema (a struct whose children are the columns; only the selected ones with
  /// ReadOptions::columns), or NULL before it arrived. Owned by the decoder.
  const ArrowSchema* schema() const noexcept;
  /// A deep copy of the schema, for exporting.
  Result<UniqueSchema> ExportSchema() const;
  /// The declared metadata version (meaningful once the schema arrived).
  MetadataVersion version() const noexcept;
  /// Whether the decoder stands between two messages (a stream may end there without the
  /// end-of-stream marker, as Arrow C++ allows).
  bool between_messages() const noexcept;
  /// Whether the end-of-stream marker was read.
  bool finished() const noexcept;
  /// Messages decoded so far.
  int64_t messages_decoded() const noexcept;
  /// Bytes allocated by decompression and byte-swapping so far (0 for a zero-copy read).
  int64_t bytes_copied() const noexcept;

 private:
  friend class FileReader;
  struct FERRY_HIDDEN Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry::ipc
