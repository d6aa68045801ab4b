// ArrowArray trees over borrowed buffers.
#include "ipc/shared_array.hpp"

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

}  // namespace ferry::ipc::internal
