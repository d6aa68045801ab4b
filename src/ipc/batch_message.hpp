// The Message flatbuffer of a record batch, made once per shape and patched for each batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ferry/core/bytes.hpp"
#include "ferry/ipc/writer.hpp"
#include "ipc/assembler.hpp"
#include "ipc/flatbuffers.hpp"

namespace ferry::ipc::internal {

/// The RecordBatch table of a batch laid out as `body`, built into `b`, saying the body's buffers
/// are compressed with `compression` where it is not kNone.
flatbuffers::Offset<fb::RecordBatch> BatchTable(flatbuffers::FlatBufferBuilder& b,
                                                const AssembledBody& body, Compression compression);

/// Makes the Message flatbuffer of each record batch a writer sends. The flatbuffer of a batch
/// with rows and a body, no compression and no view counts is laid out by the shape alone (its
/// counts of field nodes and buffers): the values sit at the same places in every such message.
/// So the first batch of a shape is built with a FlatBufferBuilder, and the next ones of that
/// shape copy its values into those places: byte for byte what the builder would make, without
/// building. Owned by one writer; not thread-safe.
class BatchMessages {
 public:
  /// The Message flatbuffer (metadata version 5) of a record batch laid out as `body`, which
  /// has no compression; valid until the next call.
  ByteSpan Encode(const AssembledBody& body);

  /// Whether the last Encode patched the message before it rather than building one; for tests.
  bool patched() const { return patched_; }

 private:
  // Whether a message of `body` has the layout its shape gives: every field present.
  static bool Fixed(const AssembledBody& body) {
    return body.length > 0 && body.body_length > 0 && body.variadic_counts.empty();
  }

  flatbuffers::FlatBufferBuilder builder_;
  std::vector<uint8_t> bytes_;  // the last message, patched in place for the next of its shape
  bool reusable_ = false;       // bytes_ is a Fixed message whose places are below
  size_t nodes_ = 0;            // its shape
  size_t buffers_ = 0;
  size_t length_at_ = 0;  // where its values are
  size_t body_length_at_ = 0;
  size_t nodes_at_ = 0;
  size_t buffers_at_ = 0;
  bool patched_ = false;
};

}  // namespace ferry::ipc::internal
