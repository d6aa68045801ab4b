// KeepAlive: the one way ferry exports ArrowArray trees whose release must keep C++ memory
// alive (decoded IPC bodies, copied device blocks, builder buffers, memory views, shared arrays).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/export.h"

namespace ferry {

/// Makes ArrowArray nodes that keep one owner (`keep`) alive until they are released. Nodes are
/// allocated together in blocks (one allocation for a whole batch when reserved), and each node
/// holds one reference to them: the storage and `keep` go when the last node is released,
/// whichever it is, so a consumer may move a child out and release it later. A node's children
/// may be nodes of this KeepAlive or any ArrowArray moved in; releasing the node releases those
/// not moved out. Move-only; destroying it drops only the maker's own reference.
class FERRY_EXPORT KeepAlive {
 public:
  explicit KeepAlive(std::shared_ptr<const void> keep = nullptr);
  ~KeepAlive();
  KeepAlive(KeepAlive&& other) noexcept;
  KeepAlive& operator=(KeepAlive&& other) noexcept;
  KeepAlive(const KeepAlive&) = delete;
  KeepAlive& operator=(const KeepAlive&) = delete;

  /// Room for `n` more nodes, in one allocation (the first few come with the KeepAlive).
  void Reserve(size_t n);

  /// Keep `also` alive too, as long as `keep`: for owners found while the nodes are made (a
  /// decompressed buffer's). Costs an allocation the first time.
  void Keep(std::shared_ptr<const void> also);

  /// What the maker of a node fills: `children[0..n_children)` (zeroed structs) and the
  /// dictionary slot (set `out->dictionary = dictionary` once it is filled).
  struct Slots {
    ArrowArray* children = nullptr;
    ArrowArray* dictionary = nullptr;
  };
  /// Make `out` a node of `length` with `null_count` and `offset` over `n_buffers` buffer
  /// pointers (copied; the bytes are not) and `n_children` zeroed children.
  Slots MakeNode(ArrowArray* out, int64_t length, int64_t null_count, int64_t offset,
                 const void* const* buffers, int64_t n_buffers, int64_t n_children);

  /// Make `out` a tree with the shape, lengths, offsets, null counts and buffer pointers of
  /// `shape` (children and dictionary included), every node from this KeepAlive. `shape` is read
  /// now; its buffers must stay valid as long as `keep` does. No buffer is copied.
  void Mirror(const ArrowArray& shape, ArrowArray* out);

 private:
  class Arena;
  Arena* arena_;
};

}  // namespace ferry
