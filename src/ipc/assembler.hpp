// Laying out a record batch body for writing: field nodes, buffer offsets and the list of pieces
// (the arrays' own buffers plus padding), so the sink writes them without gathering.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/core/host_buffer.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/ipc/sink.hpp"
#include "ipc/compression.hpp"
#include "ipc/flatbuffers.hpp"

namespace ferry::ipc::internal {

/// A body ready to write. `pieces` point into the source arrays or into `owned` (slices that
/// needed rebasing or bit-shifting, and compressed buffers).
struct AssembledBody {
  int64_t length = 0;
  std::vector<fb::FieldNode> nodes;
  std::vector<fb::Buffer> buffers;
  std::vector<int64_t> variadic_counts;
  std::vector<ByteSpan> pieces;
  /// Where each of `buffers` is now (NULL for an empty buffer), for writers that send buffers
  /// apart rather than packed.
  std::vector<const void*> buffer_data;
  std::list<HostBuffer> owned;  // a list: empty (as it mostly is), it allocates nothing
  int64_t body_length = 0;
  /// Bytes copied into `owned` (0 when every buffer went out in place).
  int64_t copied = 0;
  /// Each buffer's bytes as laid out, before padding: the assembler's own room.
  std::vector<ByteSpan> entries;

  /// Empty again, its vectors keeping their room, so that a writer that reuses one body for
  /// every batch allocates nothing for it once the first batch has sized it.
  void Clear();
};

/// Lay out the columns of `root` (a struct array of `schema`) as one body. `alignment` (8 or 64)
/// pads every buffer. Slices are written as their visible range only. `swap_bytes` writes the
/// other byte order (every multi-byte buffer is then a swapped copy). `types`, when given, is a
/// view made from `schema` (its parsed types spare parsing each node's for every batch).
Result<AssembledBody> AssembleBatch(const ArrowSchema* schema, const ArrowArray* root,
                                    int64_t alignment, Codec codec, int level,
                                    bool swap_bytes = false, const ArrayView* types = nullptr);

/// The same into `out`, cleared first (its room reused); on failure `out` holds a partial body.
[[nodiscard]] Status AssembleBatchInto(const ArrowSchema* schema, const ArrowArray* root,
                                       int64_t alignment, Codec codec, int level, bool swap_bytes,
                                       const ArrayView* types, AssembledBody* out);

/// Lay out one array (a dictionary's values) as a one-column body.
Result<AssembledBody> AssembleArray(const ArrowSchema* schema, const ArrowArray* array,
                                    int64_t alignment, Codec codec, int level,
                                    bool swap_bytes = false);

}  // namespace ferry::ipc::internal
