// ArrowArray trees over borrowed buffers.
#include "ipc/shared_array.hpp"

#include <algorithm>
#include <new>

namespace ferry::ipc::internal {

namespace {

void ReleaseNode(ArrowArray* array) {
  auto* data = static_cast<NodeData*>(array->private_data);
  for (ArrowArray& child : data->children) {
    if (child.release != nullptr) child.release(&child);  // not moved out by the consumer
  }
  if (data->dictionary.release != nullptr) data->dictionary.release(&data->dictionary);
  delete data;
  array->release = nullptr;
}

}  // namespace

NodeData* InitNode(ArrowArray* out, int64_t length, int64_t null_count, int64_t offset,
                   std::vector<const void*> buffers, int64_t n_children,
                   std::shared_ptr<const void> keep) {
  auto* data = new NodeData();
  data->keep = std::move(keep);
  data->buffers = std::move(buffers);
  data->children.resize(static_cast<size_t>(n_children));
  data->child_ptrs.resize(static_cast<size_t>(n_children));
  for (size_t i = 0; i < data->children.size(); ++i) data->child_ptrs[i] = &data->children[i];
  *out = ArrowArray{};
  out->length = length;
  out->null_count = null_count;
  out->offset = offset;
  out->n_buffers = static_cast<int64_t>(data->buffers.size());
  out->buffers = data->buffers.empty() ? nullptr : data->buffers.data();
  out->n_children = n_children;
  out->children = n_children == 0 ? nullptr : data->child_ptrs.data();
  out->private_data = data;
  out->release = &ReleaseNode;
  return data;
}

void ShareArray(const ArrowArray& src, const std::shared_ptr<const void>& keep, ArrowArray* out) {
  std::vector<const void*> buffers(src.buffers, src.buffers + src.n_buffers);
  NodeData* data = InitNode(out, src.length, src.null_count, src.offset, std::move(buffers),
                            src.n_children, keep);
  for (int64_t i = 0; i < src.n_children; ++i) {
    ShareArray(*src.children[i], keep, &data->children[static_cast<size_t>(i)]);
  }
  if (src.dictionary != nullptr) {
    ShareArray(*src.dictionary, keep, &data->dictionary);
    out->dictionary = &data->dictionary;
  }
}

// ---- NodeArena ---------------------------------------------------------------------------------

struct NodeArena::Node {
  NodeArena* arena = nullptr;
  const void* inline_buffers[3] = {};
  std::vector<const void*> many_buffers;  // view types: more than three
  std::unique_ptr<ArrowArray[]> children;
  std::unique_ptr<ArrowArray*[]> child_ptrs;
  int64_t n_children = 0;
  ArrowArray dictionary{};
};

NodeArena* NodeArena::Make(std::shared_ptr<const void> keep) {
  auto* arena = new NodeArena();
  arena->keep_ = std::move(keep);
  return arena;
}

NodeArena::~NodeArena() {
  for (Block& b : blocks_) {
    for (size_t i = 0; i < b.used; ++i) b.nodes[i].~Node();
    std::allocator<Node>().deallocate(b.nodes, b.capacity);
  }
}

void NodeArena::Reserve(size_t n) {
  if (!blocks_.empty() && blocks_.back().used + n <= blocks_.back().capacity) return;
  const size_t capacity = std::max<size_t>(n, 16);
  blocks_.push_back(Block{std::allocator<Node>().allocate(capacity), capacity, 0});
}

void NodeArena::Init(ArrowArray* out, int64_t length, int64_t null_count,
                     const void* const* buffers, int64_t n_buffers, int64_t n_children,
                     ArrowArray** children, ArrowArray** dictionary) {
  Reserve(1);
  Block& block = blocks_.back();
  Node& node = *new (&block.nodes[block.used++]) Node();
  node.arena = this;
  const void** slots = node.inline_buffers;
  if (n_buffers > 3) {
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
  out->n_buffers = n_buffers;
  out->buffers = n_buffers == 0 ? nullptr : slots;
  out->n_children = n_children;
  out->children = n_children == 0 ? nullptr : node.child_ptrs.get();
  out->private_data = &node;
  out->release = &NodeArena::Release;
  *children = node.children.get();
  *dictionary = &node.dictionary;
}

void NodeArena::Release(ArrowArray* array) {
  auto* node = static_cast<Node*>(array->private_data);
  for (int64_t i = 0; i < node->n_children; ++i) {
    ArrowArray& child = node->children[i];
    if (child.release != nullptr) child.release(&child);  // not moved out by the consumer
  }
  if (node->dictionary.release != nullptr) node->dictionary.release(&node->dictionary);
  array->release = nullptr;
  node->arena->Unref();
}

void NodeArena::Unref() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace ferry::ipc::internal
