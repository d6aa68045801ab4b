// ArrayBytes: a batch's size from a plan of its schema (array_bytes.hpp).
#include "ferry/format/array_bytes.hpp"

#include <cstring>
#include <string>

#include "format/implied_size.hpp"
#include "format/type_kinds.hpp"

namespace ferry {

namespace {

template <typename T>
int64_t LoadAt(const void* data, int64_t i) {
  T value;
  std::memcpy(&value, static_cast<const uint8_t*>(data) + i * static_cast<int64_t>(sizeof(T)),
              sizeof(T));
  return static_cast<int64_t>(value);
}

}  // namespace

void ArrayBytes::Plan(const ArrayView& v, bool* needs_view) {
  const SchemaView& t = v.type();
  *needs_view = *needs_view || internal::IsViewType(t.storage_type);
  Node node;
  node.layout = t.layout;
  node.n_children = v.n_children();
  node.list_view = t.storage_type == TypeId::kListView || t.storage_type == TypeId::kLargeListView;
  node.dictionary = v.dictionary() != nullptr;
  nodes_.push_back(node);
  names_.emplace_back(v.name().empty() ? "(unnamed)" : std::string(v.name()));
  for (int64_t i = 0; i < v.n_children(); ++i) Plan(v.child(i), needs_view);
  if (v.dictionary() != nullptr) Plan(*v.dictionary(), needs_view);
}

Result<ArrayBytes> ArrayBytes::Make(const ArrowSchema* schema) {
  FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(schema));
  ArrayBytes out;
  bool needs_view = false;
  out.Plan(view, &needs_view);
  if (needs_view) out.view_.emplace(std::move(view));
  return out;
}

Result<int64_t> ArrayBytes::Of(const ArrowArray* array) {
  if (view_) {
    FERRY_RETURN_NOT_OK(view_->SetArray(array));
    const int64_t total = ViewBytes(*view_);
    view_->Reset();
    return total;
  }
  size_t at = 0;
  int64_t total = 0;
  FERRY_RETURN_NOT_OK(Walk(array, &at, &total));
  return total;
}

Status ArrayBytes::Walk(const ArrowArray* a, size_t* at, int64_t* total) const {
  const size_t here = (*at)++;
  const Node& node = nodes_[here];
  auto fail = [&](const char* why) {
    return Status::Invalid("sizing the array at \"" + names_[here] + "\": " + why);
  };
  if (a == nullptr || a->release == nullptr) return fail("the array is NULL or released");
  int64_t end = 0;
  if (a->length < 0 || a->offset < 0 || __builtin_add_overflow(a->offset, a->length, &end)) {
    return fail("its length or offset is negative, or their sum overflows");
  }
  const Layout& layout = node.layout;
  if (a->n_buffers != layout.n_fixed_buffers || (a->n_buffers > 0 && a->buffers == nullptr)) {
    return fail("its buffers are not the ones its type has");
  }
  if (a->n_children != node.n_children || (a->n_children > 0 && a->children == nullptr)) {
    return fail("its children are not the schema's");
  }
  if ((a->dictionary != nullptr) != node.dictionary) {
    return fail("it has a dictionary where the schema has none, or none where the schema has one");
  }
  // Each buffer as ArrayView::SetArray sizes it (ImpliedBufferSize).
  int64_t bytes = 0;
  for (int32_t i = 0; i < layout.n_fixed_buffers; ++i) {
    int64_t size = internal::ImpliedBufferSize(layout, i, node.list_view, end, a->length,
                                               a->buffers[i] != nullptr);
    if (size == internal::kSizeFromOffsets) {
      // A binary column's characters: up to its last offset (buffer 1).
      if (layout.n_fixed_buffers != 3 || layout.buffer_type[1] != BufferType::kDataOffset) {
        return fail("its type has a data buffer of no fixed width and no offsets");
      }
      const void* offsets = a->buffers[1];
      size = offsets == nullptr                  ? 0
             : layout.element_size_bits[1] == 32 ? LoadAt<int32_t>(offsets, end)
                                                 : LoadAt<int64_t>(offsets, end);
      if (size < 0) return fail("its last offset is negative");
    }
    if (size < 0 || __builtin_add_overflow(bytes, size, &bytes)) {
      return fail("its size overflows");
    }
  }
  if (__builtin_add_overflow(*total, bytes, total)) return fail("its size overflows");
  for (int64_t i = 0; i < a->n_children; ++i) FERRY_RETURN_NOT_OK(Walk(a->children[i], at, total));
  if (node.dictionary) FERRY_RETURN_NOT_OK(Walk(a->dictionary, at, total));
  return Status::OK();
}

int64_t ViewBytes(const ArrayView& view) {
  int64_t total = 0;
  for (int64_t i = 0; i < view.n_buffers(); ++i) total += view.buffer(i).size;
  for (int64_t i = 0; i < view.n_children(); ++i) total += ViewBytes(view.child(i));
  if (view.dictionary() != nullptr) total += ViewBytes(*view.dictionary());
  return total;
}

}  // namespace ferry
