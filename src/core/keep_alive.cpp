// KeepAlive: ArrowArray nodes allocated in blocks, each holding one reference to its arena.
#include "ferry/core/keep_alive.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <vector>

namespace ferry {

class KeepAlive::Arena {
 public:
  explicit Arena(std::shared_ptr<const void> keep) : keep_(std::move(keep)) {}

  void Reserve(size_t n) {
    if (!blocks_.empty() && blocks_.back().used + n <= blocks_.back().capacity) return;
    const size_t capacity = std::max<size_t>(n, 16);
    blocks_.push_back(Block{std::allocator<Node>().allocate(capacity), capacity, 0});
  }

  Slots MakeNode(ArrowArray* out, int64_t length, int64_t null_count, int64_t offset,
                 const void* const* buffers, int64_t n_buffers, int64_t n_children) {
    Reserve(1);
    Block& block = blocks_.back();
    Node& node = *new (&block.nodes[block.used++]) Node();
    node.arena = this;
    const void** slots = node.inline_buffers;
    if (n_buffers > kInlineBuffers) {
      node.many_buffers.assign(buffers, buffers + n_buffers);
      slots = node.many_buffers.data();
    } else {
      for (int64_t i = 0; i < n_buffers; ++i) slots[i] = buffers[i];
    }
    if (n_children > 0) {
      node.children = std::make_unique<ArrowArray[]>(static_cast<size_t>(n_children));
      node.child_ptrs = std::make_unique<ArrowArray*[]>(static_cast<size_t>(n_children));
      for (int64_t i = 0; i < n_children; ++i) node.child_ptrs[i] = &node.children[i];
    }
    node.n_children = n_children;
    refs_.fetch_add(1, std::memory_order_relaxed);
    *out = ArrowArray{};
    out->length = length;
    out->null_count = null_count;
    out->offset = offset;
    out->n_buffers = n_buffers;
    out->buffers = n_buffers == 0 ? nullptr : slots;
    out->n_children = n_children;
    out->children = n_children == 0 ? nullptr : node.child_ptrs.get();
    out->private_data = &node;
    out->release = &Arena::Release;
    return Slots{node.children.get(), &node.dictionary};
  }

  void Unref() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  static constexpr int64_t kInlineBuffers = 3;

  struct Node {
    Arena* arena = nullptr;
    const void* inline_buffers[kInlineBuffers] = {};
    std::vector<const void*> many_buffers;  // view types: more than three
    std::unique_ptr<ArrowArray[]> children;
    std::unique_ptr<ArrowArray*[]> child_ptrs;
    int64_t n_children = 0;
    ArrowArray dictionary{};
  };
  struct Block {
    Node* nodes;
    size_t capacity;
    size_t used;
  };

  ~Arena() {
    for (Block& b : blocks_) {
      for (size_t i = 0; i < b.used; ++i) b.nodes[i].~Node();
      std::allocator<Node>().deallocate(b.nodes, b.capacity);
    }
  }

  static void Release(ArrowArray* array) {
    auto* node = static_cast<Node*>(array->private_data);
    for (int64_t i = 0; i < node->n_children; ++i) {
      ArrowArray& child = node->children[i];
      if (child.release != nullptr) child.release(&child);  // not moved out by the consumer
    }
    if (node->dictionary.release != nullptr) node->dictionary.release(&node->dictionary);
    array->release = nullptr;
    node->arena->Unref();
  }

  std::atomic<int64_t> refs_{1};  // the KeepAlive's own, plus one per live node
  std::shared_ptr<const void> keep_;
  std::vector<Block> blocks_;  // raw storage; nodes are constructed as they are handed out
};

KeepAlive::KeepAlive(std::shared_ptr<const void> keep) : arena_(new Arena(std::move(keep))) {}

KeepAlive::~KeepAlive() {
  if (arena_ != nullptr) arena_->Unref();
}

KeepAlive::KeepAlive(KeepAlive&& other) noexcept : arena_(other.arena_) { other.arena_ = nullptr; }

KeepAlive& KeepAlive::operator=(KeepAlive&& other) noexcept {
  if (this != &other) {
    if (arena_ != nullptr) arena_->Unref();
    arena_ = other.arena_;
    other.arena_ = nullptr;
  }
  return *this;
}

void KeepAlive::Reserve(size_t n) { arena_->Reserve(n); }

KeepAlive::Slots KeepAlive::MakeNode(ArrowArray* out, int64_t length, int64_t null_count,
                                     int64_t offset, const void* const* buffers, int64_t n_buffers,
                                     int64_t n_children) {
  return arena_->MakeNode(out, length, null_count, offset, buffers, n_buffers, n_children);
}

void KeepAlive::Mirror(const ArrowArray& shape, ArrowArray* out) {
  const Slots slots = MakeNode(out, shape.length, shape.null_count, shape.offset, shape.buffers,
                               shape.n_buffers, shape.n_children);
  for (int64_t i = 0; i < shape.n_children; ++i) Mirror(*shape.children[i], &slots.children[i]);
  if (shape.dictionary != nullptr) {
    Mirror(*shape.dictionary, slots.dictionary);
    out->dictionary = slots.dictionary;
  }
}

}  // namespace ferry
