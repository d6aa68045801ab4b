// The bytes a batch's layout implies, sized once a batch without building a view of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/type.hpp"

namespace ferry {

/// The bytes a host array's layout implies: each buffer as far as its visible slice reaches
/// (offset + length elements; a binary column's characters up to its last offset), its
/// children's and its dictionary's included. The same figure as the sizes an ArrayView gives
/// after SetArray, summed (ViewBytes): what a reader reports as a batch's size. Made once from a
/// schema, as a plan of its nodes; sizing a batch then reads one offset a variable-length column
/// and allocates nothing (types with variadic buffers, the binary and string views, go through
/// an ArrayView the sizer keeps). Move-only, as that view is; one thread at a time (Of reuses it).
class FERRY_EXPORT ArrayBytes {
 public:
  /// The plan for arrays of `schema` (which need not outlive it). Fails as ArrayView::Make does.
  static Result<ArrayBytes> Make(const ArrowSchema* schema);

  /// The bytes of `array`, an array of the schema in host memory (or memory the host reads, such
  /// as CUDA's pinned host memory) whose offsets hold what its producer claims, as after a
  /// reader's validation. EINVAL where its shape disagrees with the schema (buffer or child
  /// counts, a missing dictionary, a negative length or offset), naming the node.
  Result<int64_t> Of(const ArrowArray* array);

 private:
  // One node of the schema, in pre-order (a node, its children's subtrees, then its
  // dictionary's).
  struct Node {
    Layout layout;
    int64_t n_children = 0;
    bool list_view = false;   // offsets and sizes of one element each
    bool dictionary = false;  // the dictionary's subtree follows the children's
  };

  // Append the plan of `view`'s tree; whether a view type needs the ArrayView.
  void Plan(const ArrayView& view, bool* needs_view);
  // Add the bytes of `array`, node `*at` of the plan, and of its subtree, to `*total`.
  Status Walk(const ArrowArray* array, size_t* at, int64_t* total) const;

  std::vector<Node> nodes_;
  std::vector<std::string> names_;  // each node's name, for errors
  std::optional<ArrayView> view_;   // for schemas with view types
};

/// The bytes of the arrays `view` was last set to: its buffers' sizes, its children's and its
/// dictionary's. ArrayBytes::Of gives the same without a view.
FERRY_EXPORT int64_t ViewBytes(const ArrayView& view);

}  // namespace ferry
