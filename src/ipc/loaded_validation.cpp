// Validation of a loaded batch: through an ArrayView with the IPC sizes applied, or, at the
// default level, in one pass that checks what the view's SetArray and Validate check, for the
// layouts a stream's batches mostly have, straight from the ArrowArrays and the IPC sizes.
#include "ipc/loaded_validation.hpp"

#include <atomic>
#include <cstring>
#include <limits>

#include "ipc/schema_flatbuffer.hpp"

namespace ferry::ipc::internal {

namespace {

std::atomic<bool> g_quick{true};

constexpr int64_t kNoBound = std::numeric_limits<int64_t>::max();

template <typename Offset>
Offset LoadAt(const void* buffer, int64_t i) {
  Offset v;
  std::memcpy(&v, static_cast<const uint8_t*>(buffer) + i * static_cast<int64_t>(sizeof(Offset)),
              sizeof(Offset));
  return v;
}

// The view's default check of an offsets buffer: the first offset is not negative, the last is
// not below it nor above `limit`. The loader checked that the buffer holds length + 1 offsets.
template <typename Offset>
bool OffsetEndsHold(const void* offsets, int64_t length, int64_t limit) {
  if (length == 0) return true;
  const int64_t first = LoadAt<Offset>(offsets, 0);
  const int64_t last = LoadAt<Offset>(offsets, length);
  return first >= 0 && last >= first && last <= limit;
}

class QuickWalk {
 public:
  // `sizes`: the IPC sizes of the nodes in pre-order, or NULL for a batch that has none.
  explicit QuickWalk(const BufferSizes* sizes) : sizes_(sizes) {}

  // Whether node `a`, of type `t`, and its children pass; `sized`: the node has IPC sizes (the
  // next in pre-order).
  bool Node(const ArrayView& t, const ArrowArray* a, int depth, bool sized) {
    if (depth > kMaxDepth || a == nullptr || a->release == nullptr) return false;
    if (t.dictionary() != nullptr || a->dictionary != nullptr) return false;
    if (a->n_children != t.n_children() || (a->n_children > 0 && a->children == nullptr)) {
      return false;
    }
    const int64_t* node_sizes = nullptr;
    if (sized && sizes_ != nullptr) {
      if (next_ >= sizes_->nodes()) return false;
      const size_t first = sizes_->starts[next_];
      if (sizes_->starts[next_ + 1] - first !=
          static_cast<uint32_t>(t.type().layout.n_fixed_buffers)) {
        return false;
      }
      node_sizes = sizes_->sizes.data() + first;
      ++next_;
    }
    if (!LoadedNodePassesDefault(t.type(), a, node_sizes)) return false;
    for (int64_t c = 0; c < a->n_children; ++c) {
      if (!Node(t.child(c), a->children[c], depth + 1, true)) return false;
    }
    return true;
  }

 private:
  const BufferSizes* sizes_;
  size_t next_ = 0;
};

// Apply the loader's per-node IPC buffer sizes to a view tree, in the loader's pre-order
// (children, not dictionaries: those were validated when they arrived).
void ApplySizes(ArrayView& v, const BufferSizes& sizes, size_t* next) {
  if (*next < sizes.nodes()) {
    const uint32_t begin = sizes.starts[*next];
    const uint32_t end = sizes.starts[*next + 1];
    ++*next;
    for (uint32_t k = begin; k < end; ++k) {
      const auto b = static_cast<int64_t>(k - begin);
      // A NULL validity bitmap (size 0) keeps the size the view derived.
      if (sizes.sizes[k] == 0 && v.buffer(b).data == nullptr) continue;
      v.set_buffer_size(b, sizes.sizes[k]);
    }
  }
  for (int64_t c = 0; c < v.n_children(); ++c) ApplySizes(v.child(c), sizes, next);
}

}  // namespace

Status ValidateLoaded(const ArrowSchema* schema, const ArrowArray* array, const BufferSizes& sizes,
                      bool skip_root, ValidationLevel level, const MessageLabel& label) {
  if (level == ValidationLevel::kNone) return Status::OK();
  FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(schema));
  return ValidateLoaded(view, array, sizes, skip_root, level, label);
}

Status ValidateLoaded(ArrayView& view, const ArrowArray* array, const BufferSizes& sizes,
                      bool skip_root, ValidationLevel level, const MessageLabel& label) {
  if (level == ValidationLevel::kNone) return Status::OK();
  // Most batches pass the one-pass check; the view's pass decides the rest and names what is
  // wrong. (Minimal validation never reads a buffer, so it always goes through the view.)
  if (level == ValidationLevel::kDefault && QuickValidation() &&
      PassesDefaultQuickly(view, array, sizes, skip_root)) {
    return Status::OK();
  }
  Status st = view.SetArray(array);
  if (st.ok()) {
    size_t next = 0;
    if (skip_root) {
      for (int64_t c = 0; c < view.n_children(); ++c) ApplySizes(view.child(c), sizes, &next);
    } else {
      ApplySizes(view, sizes, &next);
    }
    // Every dictionary here is the decoder's, checked at this level as it arrived.
    st = view.Validate(level, DictionaryValues::kAlreadyChecked);
  }
  if (!st.ok()) return st.WithContext(label.str());
  return Status::OK();
}

bool LoadedNodePassesDefault(const SchemaView& type, const ArrowArray* a, const int64_t* sizes) {
  const Layout& layout = type.layout;
  const int64_t length = a->length;
  if (length < 0 || length > kOnePassMaxLength || a->offset != 0 || a->null_count < -1) {
    return false;
  }
  if (a->n_buffers != layout.n_fixed_buffers || (a->n_buffers > 0 && a->buffers == nullptr)) {
    return false;
  }
  for (int32_t i = 0; i < layout.n_fixed_buffers; ++i) {
    const void* data = a->buffers[i];
    const auto slot = static_cast<size_t>(i);
    if (layout.buffer_type[slot] == BufferType::kValidity) {
      if (data == nullptr && a->null_count > 0) return false;
      continue;
    }
    // A NULL buffer that is not a bitmap fails the view's checks when sizes say it has bytes.
    if (data == nullptr) return false;
    const int64_t width = layout.element_size_bits[slot] / 8;
    int64_t bytes = 0;
    if (layout.buffer_type[slot] == BufferType::kData && width > 0 &&
        __builtin_mul_overflow(length, width, &bytes)) {
      return false;  // the view reports the size's overflow
    }
  }
  switch (type.storage_type) {
    // With no IPC size the view takes the last offset for the data's size: no bound.
    case TypeId::kBinary:
    case TypeId::kString:
      return OffsetEndsHold<int32_t>(a->buffers[1], length, sizes != nullptr ? sizes[2] : kNoBound);
    case TypeId::kLargeBinary:
    case TypeId::kLargeString:
      return OffsetEndsHold<int64_t>(a->buffers[1], length, sizes != nullptr ? sizes[2] : kNoBound);
    case TypeId::kList:
    case TypeId::kMap:
      return a->n_children == 1 && a->children[0] != nullptr &&
             OffsetEndsHold<int32_t>(a->buffers[1], length, a->children[0]->length);
    case TypeId::kLargeList:
      return a->n_children == 1 && a->children[0] != nullptr &&
             OffsetEndsHold<int64_t>(a->buffers[1], length, a->children[0]->length);
    case TypeId::kStruct:
      for (int64_t c = 0; c < a->n_children; ++c) {
        if (a->children[c] == nullptr || a->children[c]->length < length) return false;
      }
      return true;
    default:
      // A fixed-width type (a validity bitmap and values, no children) needs nothing more;
      // null, views, list views, fixed-size lists, unions and run-end encoded are the view's.
      return layout.n_fixed_buffers == 2 && layout.buffer_type[0] == BufferType::kValidity &&
             layout.buffer_type[1] == BufferType::kData && layout.element_size_bits[1] > 0 &&
             a->n_children == 0;
  }
}

bool PassesDefaultQuickly(const ArrayView& types, const ArrowArray* array, const BufferSizes& sizes,
                          bool skip_root) {
  QuickWalk walk(&sizes);
  return walk.Node(types, array, 0, !skip_root);
}

bool PassesDefaultQuickly(const ArrayView& types, const ArrowArray* array) {
  QuickWalk walk(nullptr);
  return walk.Node(types, array, 0, false);
}

void SetQuickValidation(bool on) { g_quick.store(on, std::memory_order_relaxed); }

bool QuickValidation() { return g_quick.load(std::memory_order_relaxed); }

}  // namespace ferry::ipc::internal
