// MemoryView geometry: contiguity, request flags and item addressing.
#include "ferry/memview/memory_view.hpp"

#include <cstring>

namespace ferry::memview {

int64_t MemoryView::n_items() const noexcept {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

int64_t MemoryView::stride(int64_t dim) const noexcept {
  if (!strides.empty()) return strides[static_cast<size_t>(dim)];
  int64_t s = item_size;
  for (int64_t d = ndim - 1; d > dim; --d) s *= shape[static_cast<size_t>(d)];
  return s;
}

Result<MemoryView> MakeContiguousView(std::shared_ptr<const void> owner, uint8_t* data,
                                      int64_t size, std::string format, std::vector<int64_t> shape,
                                      bool readonly) {
  MemoryView view;
  FERRY_ASSIGN_OR_RAISE(view.item_desc, ParseItemFormat(format.empty() ? "C" : format));
  view.item_size = view.item_desc.item_size;
  int64_t bytes = view.item_size;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      return Status::Invalid("memory view: shape[" + std::to_string(d) + "] is negative (" +
                             std::to_string(shape[d]) + ")");
    }
    if (__builtin_mul_overflow(bytes, shape[d], &bytes)) {
      return Status::Invalid("memory view: the shape's byte size overflows");
    }
  }
  if (bytes > size) {
    return Status::Invalid("memory view: the shape needs " + std::to_string(bytes) +
                           " bytes but only " + std::to_string(size) + " are given");
  }
  view.owner = std::move(owner);
  view.data = data;
  view.size = bytes;
  view.readonly = readonly;
  view.format = std::move(format);
  view.ndim = static_cast<int64_t>(shape.size());
  view.shape = std::move(shape);
  return view;
}

namespace {

bool IsContiguous(const MemoryView& view, bool row_major) noexcept {
  if (!view.sub_offsets.empty()) return false;
  if (view.n_items() == 0) return true;
  int64_t expected = view.item_size;
  for (int64_t k = 0; k < view.ndim; ++k) {
    const int64_t d = row_major ? view.ndim - 1 - k : k;
    const int64_t extent = view.shape[static_cast<size_t>(d)];
    if (extent > 1 && view.stride(d) != expected) return false;
    expected *= extent;
  }
  return true;
}

}  // namespace

bool IsRowMajorContiguous(const MemoryView& view) noexcept { return IsContiguous(view, true); }
bool IsColumnMajorContiguous(const MemoryView& view) noexcept { return IsContiguous(view, false); }

Status ConformToRequest(MemoryView* view, int32_t flags) {
  auto has = [flags](int32_t f) { return (flags & f) == f; };
  if (has(kWritable) && view->readonly) {
    return Status::Invalid("memory view: WRITABLE was requested but the memory is read-only");
  }
  if (!view->sub_offsets.empty() && !has(kIndirect)) {
    return Status::Invalid(
        "memory view: the view is indirect (sub-offsets) but INDIRECT was not "
        "requested");
  }
  if (has(kRowMajor) && !has(kColumnMajor) && !IsRowMajorContiguous(*view)) {
    return Status::Invalid(
        "memory view: ROW_MAJOR was requested but the view is not row-major "
        "contiguous");
  }
  if (has(kColumnMajor) && !has(kRowMajor) && !IsColumnMajorContiguous(*view)) {
    return Status::Invalid(
        "memory view: COLUMN_MAJOR was requested but the view is not "
        "column-major contiguous");
  }
  if (has(kAnyContiguous) && !IsRowMajorContiguous(*view) && !IsColumnMajorContiguous(*view)) {
    return Status::Invalid(
        "memory view: ANY_CONTIGUOUS was requested but the view is neither "
        "row- nor column-major contiguous");
  }
  if (view->ndim > 1 && !has(kMultiDimensional)) {
    return Status::Invalid("memory view: the view has " + std::to_string(view->ndim) +
                           " dimensions but MULTI_DIMENSIONAL was not requested");
  }
  if (!has(kStrides)) {
    if (!IsRowMajorContiguous(*view)) {
      return Status::Invalid("memory view: the view needs strides but STRIDES was not requested");
    }
    view->strides.clear();
  }
  if (!has(kFormat)) {
    // Without FORMAT the consumer reads unsigned bytes.
    view->format.clear();
  }
  return Status::OK();
}

uint8_t* GetItemPointer(const MemoryView& view, const int64_t* indices) noexcept {
  uint8_t* ptr = view.data;
  for (int64_t d = 0; d < view.ndim; ++d) {
    ptr += indices[d] * view.stride(d);
    if (!view.sub_offsets.empty() && view.sub_offsets[static_cast<size_t>(d)] >= 0) {
      uint8_t* target;
      std::memcpy(static_cast<void*>(&target), ptr, sizeof(target));
      ptr = target + view.sub_offsets[static_cast<size_t>(d)];
    }
  }
  return ptr;
}

Result<uint8_t*> GetItemPointerChecked(const MemoryView& view,
                                       const std::vector<int64_t>& indices) {
  if (static_cast<int64_t>(indices.size()) != view.ndim) {
    return Status::Invalid("memory view: " + std::to_string(indices.size()) +
                           " indices given for " + std::to_string(view.ndim) + " dimensions");
  }
  for (int64_t d = 0; d < view.ndim; ++d) {
    const int64_t i = indices[static_cast<size_t>(d)];
    const int64_t extent = view.shape[static_cast<size_t>(d)];
    if (i < 0 || i >= extent) {
      return Status::OutOfRange("memory view: index " + std::to_string(i) +
                                " is out of range [0, " + std::to_string(extent) +
                                ") in dimension " + std::to_string(d));
    }
  }
  return GetItemPointer(view, indices.data());
}

}  // namespace ferry::memview
