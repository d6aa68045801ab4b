// RefArray: ArrowArray trees that share a ferry array's buffers.
#include "array_ref.hpp"

#include <vector>

namespace ferry_ruby {
namespace {

// One node's private data: the reference and the wrapped children and dictionary.
struct RefData {
  std::shared_ptr<const ferry::Array> keep;
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_ptrs;
  ArrowArray dictionary{};
};

void ReleaseRef(ArrowArray* a) {
  auto* data = static_cast<RefData*>(a->private_data);
  for (ArrowArray* child : data->child_ptrs) {
    if (child->release != nullptr) child->release(child);
  }
  if (data->dictionary.release != nullptr) data->dictionary.release(&data->dictionary);
  delete data;
  a->release = nullptr;
}

}  // namespace

ArrowArray RefArray(std::shared_ptr<const ferry::Array> keep, const ArrowArray* node) {
  ArrowArray out = *node;
  auto* data = new RefData{keep, {}, {}, {}};
  data->children.reserve(static_cast<size_t>(node->n_children));
  for (int64_t i = 0; i < node->n_children; ++i) {
    data->children.push_back(RefArray(keep, node->children[i]));
  }
  for (ArrowArray& child : data->children) data->child_ptrs.push_back(&child);
  out.children = data->child_ptrs.empty() ? nullptr : data->child_ptrs.data();
  if (node->dictionary != nullptr) {
    data->dictionary = RefArray(keep, node->dictionary);
    out.dictionary = &data->dictionary;
  }
  out.private_data = data;
  out.release = &ReleaseRef;
  return out;
}

}  // namespace ferry_ruby
