// ArrayView: building the view tree, pointing it at arrays, and reading elements.
#include "ferry/format/array_view.hpp"

#include <cstring>

#include "ferry/format/bits.hpp"
#include "half.hpp"
#include "implied_size.hpp"
#include "nesting.hpp"
#include "type_kinds.hpp"

namespace ferry {

namespace {

// a * b, or -1 on overflow (inputs are non-negative).
template <typename T>
T Load(const uint8_t* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

std::string Where(const ArrowSchema* schema) {
  if (schema == nullptr || schema->name == nullptr || schema->name[0] == '\0') return "array";
  return std::string("field \"") + schema->name + "\"";
}

}  // namespace

Result<ArrayView> ArrayView::Make(const ArrowSchema* schema) {
  ArrayView view;
  FERRY_RETURN_NOT_OK(view.InitFromSchema(schema, 0));
  return view;
}

Status ArrayView::InitFromSchema(const ArrowSchema* schema, int depth) {
  if (depth > internal::kMaxDepth) return Status::Invalid("schema nests deeper than 64 levels");
  FERRY_ASSIGN_OR_RAISE(type_, SchemaView::Make(schema));
  children_.clear();
  children_.resize(static_cast<size_t>(schema->n_children));
  for (int64_t i = 0; i < schema->n_children; ++i) {
    FERRY_RETURN_NOT_OK(
        children_[static_cast<size_t>(i)].InitFromSchema(schema->children[i], depth + 1));
  }
  dictionary_.reset();
  if (schema->dictionary != nullptr) {
    dictionary_ = std::make_unique<ArrayView>();
    FERRY_RETURN_NOT_OK(dictionary_->InitFromSchema(schema->dictionary, depth + 1));
  }
  union_child_index_.fill(-1);
  for (size_t i = 0; i < type_.union_type_ids.size(); ++i) {
    union_child_index_[static_cast<uint8_t>(type_.union_type_ids[i])] = static_cast<int8_t>(i);
  }
  buffers_.assign(static_cast<size_t>(type_.layout.n_fixed_buffers), BufferView{});
  return Status::OK();
}

void ArrayView::Reset() {
  array_ = nullptr;
  length_ = offset_ = null_count_ = 0;
  variadic_sizes_ = nullptr;
  buffers_.assign(static_cast<size_t>(type_.layout.n_fixed_buffers), BufferView{});
  for (ArrayView& child : children_) child.Reset();
  if (dictionary_) dictionary_->Reset();
}

Status ArrayView::SetArrayMinimal(const ArrowArray* array) {
  return SetArrayImpl(array, /*read_offsets=*/false, 0);
}

Status ArrayView::SetArray(const ArrowArray* array) {
  return SetArrayImpl(array, /*read_offsets=*/true, 0);
}

Status ArrayView::SetArrayImpl(const ArrowArray* array, bool read_offsets, int depth) {
  auto fail = [&](const std::string& why) {
    return Status::Invalid(Where(type_.schema) + ": " + why);
  };
  if (depth > internal::kMaxDepth) return Status::Invalid("array nests deeper than 64 levels");
  if (type_.schema == nullptr)
    return Status::Invalid("array view was not initialised from a schema");
  if (array == nullptr) return fail("array is NULL");
  if (array->release == nullptr) return fail("array is released");
  if (array->length < 0) return fail("length is negative (" + std::to_string(array->length) + ")");
  if (array->offset < 0) return fail("offset is negative (" + std::to_string(array->offset) + ")");
  if (array->null_count < -1) {
    return fail("null_count is " + std::to_string(array->null_count) + " (must be >= -1)");
  }
  int64_t end = 0;
  if (__builtin_add_overflow(array->offset, array->length, &end)) {
    return fail("offset + length overflows");
  }

  const TypeId storage = type_.storage_type;
  const Layout& layout = type_.layout;
  const bool is_view = internal::IsViewType(storage);
  if (is_view) {
    if (array->n_buffers < 3) {
      return fail("n_buffers is " + std::to_string(array->n_buffers) + " but " +
                  TypeIdName(storage) + " needs at least 3 (validity, views, variadic sizes)");
    }
  } else if (array->n_buffers != layout.n_fixed_buffers) {
    return fail("n_buffers is " + std::to_string(array->n_buffers) + " but " + TypeIdName(storage) +
                " needs " + std::to_string(layout.n_fixed_buffers));
  }
  if (array->n_buffers > 0 && array->buffers == nullptr) {
    return fail("buffers is NULL but n_buffers is " + std::to_string(array->n_buffers));
  }
  if (array->n_children != static_cast<int64_t>(children_.size())) {
    return fail("n_children is " + std::to_string(array->n_children) + " but the schema has " +
                std::to_string(children_.size()));
  }
  if (array->n_children > 0 && array->children == nullptr) {
    return fail("children is NULL but n_children is " + std::to_string(array->n_children));
  }
  if ((array->dictionary != nullptr) != (dictionary_ != nullptr)) {
    return fail(dictionary_
                    ? "the schema is dictionary-encoded but the array has no dictionary"
                    : "the array has a dictionary but the schema is not dictionary-encoded");
  }

  array_ = array;
  length_ = array->length;
  offset_ = array->offset;
  null_count_ = array->null_count;
  variadic_sizes_ = nullptr;
  buffers_.resize(static_cast<size_t>(array->n_buffers));
  for (int64_t i = 0; i < array->n_buffers; ++i) {
    buffers_[static_cast<size_t>(i)].data = static_cast<const uint8_t*>(array->buffers[i]);
  }

  const bool list_view =
      type_.storage_type == TypeId::kListView || type_.storage_type == TypeId::kLargeListView;
  for (int32_t i = 0; i < layout.n_fixed_buffers; ++i) {
    BufferView& buf = buffers_[static_cast<size_t>(i)];
    const int64_t size =
        internal::ImpliedBufferSize(layout, i, list_view, end, length_, buf.data != nullptr);
    if (size == internal::kSizeOverflows) {
      return fail("buffer " + std::to_string(i) + " size overflows");
    }
    buf.size = size;  // kSizeFromOffsets (-1) until the offsets are read
  }

  if (is_view) {
    const int64_t n_variadic = array->n_buffers - 3;
    const auto& sizes_buf = buffers_.back();
    if (n_variadic > 0 && sizes_buf.data == nullptr) {
      return fail("the variadic sizes buffer (last) is NULL but there are " +
                  std::to_string(n_variadic) + " data buffers");
    }
    variadic_sizes_ = reinterpret_cast<const int64_t*>(sizes_buf.data);
    buffers_.back().size = n_variadic * 8;
    for (int64_t i = 0; i < n_variadic; ++i) {
      int64_t sz = Load<int64_t>(sizes_buf.data, i);
      if (sz < 0) {
        return fail("variadic buffer " + std::to_string(i) + " has a negative size (" +
                    std::to_string(sz) + ")");
      }
      buffers_[static_cast<size_t>(2 + i)].size = sz;
    }
  }

  // Learn the data size of binary and string arrays from their last offset (one host read).
  if (read_offsets && layout.n_fixed_buffers == 3 &&
      layout.buffer_type[1] == BufferType::kDataOffset) {
    const BufferView& offsets = buffers_[1];
    if (offsets.data == nullptr) {
      buffers_[2].size = 0;
    } else if (layout.element_size_bits[1] == 32) {
      buffers_[2].size = Load<int32_t>(offsets.data, end);
    } else {
      buffers_[2].size = Load<int64_t>(offsets.data, end);
    }
  }

  for (int64_t i = 0; i < array->n_children; ++i) {
    const ArrowArray* child = array->children[i];
    Status st = children_[static_cast<size_t>(i)].SetArrayImpl(child, read_offsets, depth + 1);
    if (!st.ok()) return st;
  }
  if (dictionary_) {
    FERRY_RETURN_NOT_OK(dictionary_->SetArrayImpl(array->dictionary, read_offsets, depth + 1));
  }
  return Status::OK();
}

std::string_view ArrayView::name() const noexcept {
  if (type_.schema == nullptr || type_.schema->name == nullptr) return {};
  return type_.schema->name;
}

BufferType ArrayView::buffer_type(int64_t i) const noexcept {
  if (i < type_.layout.n_fixed_buffers) return type_.layout.buffer_type[static_cast<size_t>(i)];
  if (internal::IsViewType(type_.storage_type)) {
    return i == n_buffers() - 1 ? BufferType::kVariadicSize : BufferType::kVariadicData;
  }
  return BufferType::kNone;
}

bool ArrayView::IsValid(int64_t i) const noexcept {
  switch (type_.storage_type) {
    case TypeId::kNull:
      return false;
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
    case TypeId::kRunEndEncoded:
      return true;  // no validity buffer of their own
    default:
      break;
  }
  const uint8_t* validity = buffers_.empty() ? nullptr : buffers_[0].data;
  return validity == nullptr || GetBit(validity, offset_ + i);
}

int64_t ArrayView::GetInt(int64_t i) const noexcept {
  const uint8_t* data = buffers_.size() > 1 ? buffers_[1].data : nullptr;
  const int64_t j = offset_ + i;
  switch (type_.storage_type) {
    case TypeId::kBool:
      return GetBit(data, j) ? 1 : 0;
    case TypeId::kInt8:
      return Load<int8_t>(data, j);
    case TypeId::kUInt8:
      return Load<uint8_t>(data, j);
    case TypeId::kInt16:
      return Load<int16_t>(data, j);
    case TypeId::kUInt16:
      return Load<uint16_t>(data, j);
    case TypeId::kInt32:
    case TypeId::kDate32:
    case TypeId::kTime32:
    case TypeId::kIntervalMonths:
    case TypeId::kDecimal32:
      return Load<int32_t>(data, j);
    case TypeId::kUInt32:
      return Load<uint32_t>(data, j);
    case TypeId::kInt64:
    case TypeId::kDate64:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
    case TypeId::kDecimal64:
      return Load<int64_t>(data, j);
    case TypeId::kUInt64:
      return static_cast<int64_t>(Load<uint64_t>(data, j));
    case TypeId::kHalfFloat:
    case TypeId::kFloat:
    case TypeId::kDouble:
      return static_cast<int64_t>(GetDouble(i));
    default:
      return 0;
  }
}

uint64_t ArrayView::GetUInt(int64_t i) const noexcept {
  if (type_.storage_type == TypeId::kUInt64) {
    return Load<uint64_t>(buffers_[1].data, offset_ + i);
  }
  return static_cast<uint64_t>(GetInt(i));
}

double ArrayView::GetDouble(int64_t i) const noexcept {
  const int64_t j = offset_ + i;
  switch (type_.storage_type) {
    case TypeId::kHalfFloat:
      return internal::HalfToDouble(Load<uint16_t>(buffers_[1].data, j));
    case TypeId::kFloat:
      return Load<float>(buffers_[1].data, j);
    case TypeId::kDouble:
      return Load<double>(buffers_[1].data, j);
    case TypeId::kUInt64:
      return static_cast<double>(GetUInt(i));
    default:
      return static_cast<double>(GetInt(i));
  }
}

std::string_view ArrayView::GetViewBytes(int64_t i) const noexcept {
  const uint8_t* view = buffers_[1].data + (offset_ + i) * 16;
  int32_t size;
  std::memcpy(&size, view, 4);
  if (size <= 12) return {reinterpret_cast<const char*>(view + 4), static_cast<size_t>(size)};
  int32_t buffer_index;
  int32_t buffer_offset;
  std::memcpy(&buffer_index, view + 8, 4);
  std::memcpy(&buffer_offset, view + 12, 4);
  const uint8_t* data = buffers_[2 + static_cast<size_t>(buffer_index)].data;
  return {reinterpret_cast<const char*>(data + buffer_offset), static_cast<size_t>(size)};
}

bool ArrayView::ViewInBounds(int64_t i) const noexcept {
  const uint8_t* view = buffers_[1].data + (offset_ + i) * 16;
  int32_t word[4];
  std::memcpy(word, view, sizeof(word));
  if (word[0] <= 12) return true;
  const int64_t n_data = n_buffers() - 3;
  return word[2] >= 0 && word[2] < n_data && word[3] >= 0 && variadic_sizes_ != nullptr &&
         int64_t{word[3]} + word[0] <= variadic_sizes_[word[2]];
}

std::string_view ArrayView::GetBytes(int64_t i) const noexcept {
  const int64_t j = offset_ + i;
  switch (type_.storage_type) {
    case TypeId::kBinary:
    case TypeId::kString: {
      int32_t start = Load<int32_t>(buffers_[1].data, j);
      int32_t stop = Load<int32_t>(buffers_[1].data, j + 1);
      return {reinterpret_cast<const char*>(buffers_[2].data) + start,
              static_cast<size_t>(stop - start)};
    }
    case TypeId::kLargeBinary:
    case TypeId::kLargeString: {
      int64_t start = Load<int64_t>(buffers_[1].data, j);
      int64_t stop = Load<int64_t>(buffers_[1].data, j + 1);
      return {reinterpret_cast<const char*>(buffers_[2].data) + start,
              static_cast<size_t>(stop - start)};
    }
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return GetViewBytes(i);
    default: {
      const int32_t bits = type_.layout.element_size_bits[1];
      if (type_.layout.n_fixed_buffers < 2 || bits < 8) return {};
      const int64_t width = bits / 8;
      return {reinterpret_cast<const char*>(buffers_[1].data) + j * width,
              static_cast<size_t>(width)};
    }
  }
}

int64_t ArrayView::ListStart(int64_t i) const noexcept {
  const int64_t j = offset_ + i;
  switch (type_.storage_type) {
    case TypeId::kList:
    case TypeId::kMap:
    case TypeId::kListView:
      return Load<int32_t>(buffers_[1].data, j);
    case TypeId::kLargeList:
    case TypeId::kLargeListView:
      return Load<int64_t>(buffers_[1].data, j);
    case TypeId::kFixedSizeList:
      return j * type_.fixed_size;
    default:
      return 0;
  }
}

int64_t ArrayView::ListEnd(int64_t i) const noexcept {
  const int64_t j = offset_ + i;
  switch (type_.storage_type) {
    case TypeId::kList:
    case TypeId::kMap:
      return Load<int32_t>(buffers_[1].data, j + 1);
    case TypeId::kLargeList:
      return Load<int64_t>(buffers_[1].data, j + 1);
    case TypeId::kListView:
      return static_cast<int64_t>(Load<int32_t>(buffers_[1].data, j)) +
             Load<int32_t>(buffers_[2].data, j);
    case TypeId::kLargeListView:
      return Load<int64_t>(buffers_[1].data, j) + Load<int64_t>(buffers_[2].data, j);
    case TypeId::kFixedSizeList:
      return (j + 1) * type_.fixed_size;
    default:
      return 0;
  }
}

int8_t ArrayView::UnionTypeId(int64_t i) const noexcept {
  return Load<int8_t>(buffers_[0].data, offset_ + i);
}

int64_t ArrayView::UnionChildOffset(int64_t i) const noexcept {
  if (type_.storage_type == TypeId::kDenseUnion) {
    return Load<int32_t>(buffers_[1].data, offset_ + i);
  }
  return offset_ + i;
}

int64_t ArrayView::RunIndex(int64_t i) const noexcept {
  const ArrayView& run_ends = children_[0];
  const int64_t logical = offset_ + i;
  // First run whose end is greater than the logical index.
  int64_t lo = 0;
  int64_t hi = run_ends.length();
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (run_ends.GetInt(mid) > logical) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

}  // namespace ferry
