// ArrowArray trees whose buffers belong to someone else: each node holds a reference to the
// owner, so a consumer may release the root, or move a child out and release it later.
#pragma once

#include <memory>
#include <vector>

#include "ferry/abi/unique.hpp"

namespace ferry::ipc::internal {

/// The private data of one node: the owner reference, the buffer pointer array, and the
/// children and dictionary structs the node's pointers point at.
struct NodeData {
  std::shared_ptr<const void> keep;
  std::vector<const void*> buffers;
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_ptrs;
  ArrowArray dictionary{};
};

/// Make `out` a node over `buffers` with `n_children` children (to be filled through
/// `children(out)`), keeping `keep` alive until the node is released.
NodeData* InitNode(ArrowArray* out, int64_t length, int64_t null_count, int64_t offset,
                   std::vector<const void*> buffers, int64_t n_children,
                   std::shared_ptr<const void> keep);

/// A new tree with the same shape, lengths and buffer pointers as `src` (which must stay valid as
/// long as `keep` does): no buffer is copied.
void ShareArray(const ArrowArray& src, const std::shared_ptr<const void>& keep, ArrowArray* out);

}  // namespace ferry::ipc::internal
