// Turning a RecordBatch's nodes and buffers into ArrowArrays that point into the message body.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ferry/abi/unique.hpp"
#include "ferry/core/bytes.hpp"
#include "ferry/core/keep_alive.hpp"
#include "ipc/buffer_sizes.hpp"
#include "ipc/compression.hpp"
#include "ipc/message_label.hpp"
#include "ipc/schema_flatbuffer.hpp"

namespace ferry::ipc::internal {

/// A message body: bytes and what keeps them alive.
using Body = SharedBytes;

/// The current dictionary of an id and what keeps it alive, or an error when none was sent.
struct DictionaryRef {
  const ArrowArray* array = nullptr;
  std::shared_ptr<const void> keep;
};
using DictionaryLookup = std::function<Result<DictionaryRef>(int64_t id)>;

/// What LoadColumns fills. Reusable: a decoder keeps one, so that a stream's batches reuse the
/// vectors' room instead of allocating them per batch; Reset drops what one batch left in it.
struct LoadedColumns {
  std::vector<UniqueArray> columns;
  BufferSizes buffer_sizes;
  /// Bytes allocated by decompression or by realigning a misaligned body (0 when zero-copy).
  int64_t decompressed_bytes = 0;
  /// What made the columns' nodes (and LoadBatch's root).
  std::optional<KeepAlive> nodes;
  /// Whether the columns, under a struct root of the batch's length, certainly pass default
  /// validation (the one-pass check, made as each node was loaded when LoadColumns was asked
  /// to; false says only "not checked" or "not sure").
  bool passes_default = false;

  /// Release the columns not moved out and the maker's reference to their nodes; the vectors
  /// keep their room.
  void Reset() {
    columns.clear();
    buffer_sizes.sizes.clear();
    buffer_sizes.starts.clear();
    decompressed_bytes = 0;
    nodes.reset();
    passes_default = false;
  }
};

/// Load the columns described by `columns` (schema nodes of `schema.root`) from `batch` over
/// `body` into `out` (reset first). Checks every count, offset, length and alignment against
/// the body and the schema before any pointer is handed out; bodies are referenced, never
/// copied, unless compressed. With `selected` (one flag per column; empty: all), the others are
/// stepped over unread and only the selected are returned. `label` ("message 3") starts every
/// error. With `one_pass`, each node also gets the one-pass default check as it is made, which
/// reads its first and last offsets (so only for a body in host memory that default validation
/// will follow), and `out->passes_default` gives the verdict.
Status LoadColumns(std::span<const ArrowSchema* const> columns, const StreamSchema& schema,
                   const fb::RecordBatch* batch, const Body& body,
                   const DictionaryLookup& dictionaries, int64_t decompress_limit,
                   const MessageLabel& label, const std::vector<bool>& selected, bool one_pass,
                   LoadedColumns* out);

/// LoadColumns for a batch: the columns are loaded straight into the children of `*root`, a
/// struct array of the batch's length with no validity bitmap, made here in the same arena
/// (`out->columns` stays empty). `*root` is released on failure.
Status LoadBatch(std::span<const ArrowSchema* const> columns, const StreamSchema& schema,
                 const fb::RecordBatch* batch, const Body& body,
                 const DictionaryLookup& dictionaries, int64_t decompress_limit,
                 const MessageLabel& label, const std::vector<bool>& selected, bool one_pass,
                 UniqueArray* root, LoadedColumns* out);

/// Which of `batch`'s body buffers LoadColumns reads for the `selected` columns (one flag per
/// buffer the batch lists), found from the field nodes and the schema alone: no body needed.
Result<std::vector<bool>> BuffersOfColumns(std::span<const ArrowSchema* const> columns,
                                           const StreamSchema& schema, const fb::RecordBatch* batch,
                                           const std::vector<bool>& selected,
                                           const MessageLabel& label);

}  // namespace ferry::ipc::internal
