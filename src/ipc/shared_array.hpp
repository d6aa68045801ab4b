// ArrowArray trees whose buffers belong to someone else: each node holds a reference to the
// owner, so a consumer may release the root, or move a child out and release it later.
#pragma once

#include <atomic>
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

/// Many nodes of one loaded batch, allocated together: the batch's leaves cost no allocation
/// each. Every node holds one reference; the arena (and `keep`) goes when the last node is
/// released, whichever it is, so consumers may still move single children out.
class NodeArena {
 public:
  /// A new arena holding one reference for its creator (drop it with Unref).
  static NodeArena* Make(std::shared_ptr<const void> keep);
  /// Make `out` a node over `n_buffers` buffers with `n_children` children (zeroed, to fill
  /// through `*children`). `buffers` is copied.
  void Init(ArrowArray* out, int64_t length, int64_t null_count, const void* const* buffers,
            int64_t n_buffers, int64_t n_children, ArrowArray** children, ArrowArray** dictionary);
  void Unref() noexcept;
  /// Reserve room for `n` more nodes (one allocation).
  void Reserve(size_t n);

 private:
  struct Node;
  struct Block {
    Node* nodes;
    size_t capacity;
    size_t used;
  };
  NodeArena() = default;
  ~NodeArena();
  static void Release(ArrowArray* array);
  std::atomic<int64_t> refs_{1};
  std::shared_ptr<const void> keep_;
  // Raw storage; nodes are constructed as they are handed out.
  std::vector<Block> blocks_;
};

/// A new tree with the same shape, lengths and buffer pointers as `src` (which must stay valid as
/// long as `keep` does): no buffer is copied.
void ShareArray(const ArrowArray& src, const std::shared_ptr<const void>& keep, ArrowArray* out);

}  // namespace ferry::ipc::internal
