// Internal to the IPC decoder and writer: validation of a freshly loaded batch, with the IPC
// buffer sizes the loader recorded, and the writer's check of a producer's batch. At the default
// level most batches pass in one pass over their nodes; the rest, and every other level, go
// through an ArrayView.
#pragma once

#include <string>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/core/status.hpp"
#include "ferry/format/array_view.hpp"
#include "ipc/buffer_sizes.hpp"
#include "ipc/message_label.hpp"

namespace ferry::ipc::internal {

/// Validate a freshly loaded tree at `level`, with the IPC buffer sizes the loader recorded
/// (pre-order; children only when `skip_root`), through `view` (made from the tree's schema; its
/// array is reset by this call, or left as it was when the one-pass check decides). Errors start
/// with `label`. A dictionary in the tree is the decoder's, checked at `level` as it arrived: its
/// values are not walked again, only the indices checked against its length.
Status ValidateLoaded(ArrayView& view, const ArrowArray* array, const BufferSizes& sizes,
                      bool skip_root, ValidationLevel level, const MessageLabel& label);
/// The same through a view made now from `schema`.
Status ValidateLoaded(const ArrowSchema* schema, const ArrowArray* array, const BufferSizes& sizes,
                      bool skip_root, ValidationLevel level, const MessageLabel& label);

/// Whether the loaded tree certainly passes default validation, decided in one pass over its
/// nodes that reads only each node's first and last offsets: the checks ArrayView's SetArray and
/// default Validate make, for the primitive, binary and string, list and struct layouts. Any
/// other layout, a dictionary, or a check that does not hold gives false, and ValidateLoaded then
/// validates through the view, which names the error. Only the types of `types` are read.
bool PassesDefaultQuickly(const ArrayView& types, const ArrowArray* array, const BufferSizes& sizes,
                          bool skip_root);

/// The same for a batch with no IPC sizes (a producer's, before the writer lays it out), as
/// ArrayView::SetArray sees it: a string's or binary's data holds what its last offset says. The
/// writer asks it before validating a batch through its view.
bool PassesDefaultQuickly(const ArrayView& types, const ArrowArray* array);

/// The one-pass check of one node of `type` whose children it passed already: its length, offset
/// and null count, its buffers against `type`'s layout, and for strings, binaries, lists and
/// structs the first and last offsets against the data's IPC size (`sizes`: the node's IPC
/// buffer sizes; NULL when the view has none, which learns a string's data size from its last
/// offset) or the children's lengths. The loader calls it as it makes
/// each node, so that a batch that passes is not walked a second time.
bool LoadedNodePassesDefault(const SchemaView& type, const ArrowArray* a, const int64_t* sizes);

/// Lengths above this go to the view's validation, whose size arithmetic reports overflows.
inline constexpr int64_t kOnePassMaxLength = int64_t{1} << 48;

/// For tests: turn the one-pass check off (false) or on (true, the default) for every decoder and
/// writer, so a test can compare verdicts with and without it on the same bytes or batch.
void SetQuickValidation(bool on);
/// Whether the one-pass check is on.
bool QuickValidation();

}  // namespace ferry::ipc::internal
