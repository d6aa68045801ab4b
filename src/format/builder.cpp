// ArrayBuilder: its set-up, nulls and empty slots, nesting (unions, lists, structs, runs,
// dictionary indices) and export of the built buffers as an ArrowArray tree. The appends of
// scalar values are in builder_values.cpp.
#include "ferry/format/builder.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "ferry/core/keep_alive.hpp"
#include "ferry/format/decimal.hpp"
#include "half.hpp"
#include "nesting.hpp"
#include "type_kinds.hpp"

namespace ferry {

namespace {}  // namespace

ArrayBuilder::~ArrayBuilder() = default;

Result<std::unique_ptr<ArrayBuilder>> ArrayBuilder::Make(const ArrowSchema* schema,
                                                         Allocator* allocator) {
  std::unique_ptr<ArrayBuilder> b(new ArrayBuilder());
  FERRY_RETURN_NOT_OK(b->Init(schema, allocator ? allocator : DefaultAllocator(), 0));
  return b;
}

Status ArrayBuilder::Init(const ArrowSchema* schema, Allocator* allocator, int depth) {
  if (depth > internal::kMaxDepth) return Status::Invalid("schema nests deeper than 64 levels");
  FERRY_ASSIGN_OR_RAISE(type_, SchemaView::Make(schema));
  allocator_ = allocator;
  is_dictionary_ = schema->dictionary != nullptr;
  for (int64_t i = 0; i < schema->n_children; ++i) {
    std::unique_ptr<ArrayBuilder> child(new ArrayBuilder());
    FERRY_RETURN_NOT_OK(child->Init(schema->children[i], allocator, depth + 1));
    children_.push_back(std::move(child));
  }
  if (is_dictionary_) {
    dictionary_.reset(new ArrayBuilder());
    FERRY_RETURN_NOT_OK(dictionary_->Init(schema->dictionary, allocator, depth + 1));
  }
  ResetBuffers();
  return Status::OK();
}

void ArrayBuilder::ResetBuffers() {
  validity_ = BitmapBuilder(allocator_);
  bits_ = BitmapBuilder(allocator_);
  data_ = HostBuffer(allocator_);
  offsets_ = HostBuffer(allocator_);
  sizes_ = HostBuffer(allocator_);
  variadic_.clear();
  length_ = null_count_ = 0;
  list_view_start_ = 0;
  last_run_end_ = 0;
  const TypeId t = type_.storage_type;
  // Offsets buffers begin with a 0 (list views have none).
  if (t == TypeId::kBinary || t == TypeId::kString || t == TypeId::kList || t == TypeId::kMap) {
    (void)offsets_.Append<int32_t>(0);
  } else if (t == TypeId::kLargeBinary || t == TypeId::kLargeString || t == TypeId::kLargeList) {
    (void)offsets_.Append<int64_t>(0);
  }
}

Status ArrayBuilder::TypeError(const char* what) const {
  std::string name = type_.schema && type_.schema->name && type_.schema->name[0]
                         ? std::string(" (field \"") + type_.schema->name + "\")"
                         : std::string();
  return Status::Invalid(std::string("cannot append ") + what + " to a " +
                         (is_dictionary_ ? "dictionary<" : "") + TypeIdName(type_.storage_type) +
                         (is_dictionary_ ? ">" : "") + " builder" + name);
}

Status ArrayBuilder::AppendValidity(bool valid, int64_t n) {
  FERRY_RETURN_NOT_OK(validity_.Append(valid, n));
  if (!valid) null_count_ += n;
  return Status::OK();
}

Status ArrayBuilder::AppendOffsetValue(HostBuffer* buffer, int64_t value) {
  const TypeId t = type_.storage_type;
  const bool large = t == TypeId::kLargeBinary || t == TypeId::kLargeString ||
                     t == TypeId::kLargeList || t == TypeId::kLargeListView;
  if (large) return buffer->Append<int64_t>(value);
  if (value > std::numeric_limits<int32_t>::max()) {
    return Status::OutOfRange(std::string(TypeIdName(t)) + " offset " + std::to_string(value) +
                              " exceeds int32; use the large variant");
  }
  return buffer->Append<int32_t>(static_cast<int32_t>(value));
}

Status ArrayBuilder::AppendFixed(ByteSpan value) {
  FERRY_RETURN_NOT_OK(data_.Append(value));
  FERRY_RETURN_NOT_OK(AppendValidity(true, 1));
  ++length_;
  return Status::OK();
}

Status ArrayBuilder::AppendNull(int64_t n) {
  if (n < 0) return Status::Invalid("negative count of nulls");
  if (n == 0) return Status::OK();
  const TypeId t = type_.storage_type;
  if (is_dictionary_) {
    FERRY_RETURN_NOT_OK(data_.AppendZeros(n * internal::DataWidthBytes(type_)));
    FERRY_RETURN_NOT_OK(AppendValidity(false, n));
    length_ += n;
    return Status::OK();
  }
  switch (t) {
    case TypeId::kNull:
      null_count_ += n;
      length_ += n;
      return Status::OK();
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      if (children_.empty())
        return Status::Invalid("cannot append a null to a union with no children");
      for (int64_t i = 0; i < n; ++i) {
        FERRY_RETURN_NOT_OK(AppendUnion(type_.union_type_ids[0]));
        FERRY_RETURN_NOT_OK(children_[0]->AppendNull(1));
      }
      return Status::OK();
    case TypeId::kRunEndEncoded:
      FERRY_RETURN_NOT_OK(children_[1]->AppendNull(1));
      return AppendRun(n);
    case TypeId::kBool:
      FERRY_RETURN_NOT_OK(bits_.Append(false, n));
      break;
    case TypeId::kBinary:
    case TypeId::kString:
    case TypeId::kLargeBinary:
    case TypeId::kLargeString:
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kMap: {
      const bool is_list = t == TypeId::kList || t == TypeId::kMap || t == TypeId::kLargeList;
      const int64_t last = is_list ? children_[0]->length() : data_.size();
      for (int64_t i = 0; i < n; ++i) FERRY_RETURN_NOT_OK(AppendOffsetValue(&offsets_, last));
      break;
    }
    case TypeId::kListView:
    case TypeId::kLargeListView:
      for (int64_t i = 0; i < n; ++i) {
        FERRY_RETURN_NOT_OK(AppendOffsetValue(&offsets_, 0));
        FERRY_RETURN_NOT_OK(AppendOffsetValue(&sizes_, 0));
      }
      break;
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      FERRY_RETURN_NOT_OK(data_.AppendZeros(16 * n));
      break;
    case TypeId::kFixedSizeList:
      FERRY_RETURN_NOT_OK(children_[0]->AppendNull(n * type_.fixed_size));
      break;
    case TypeId::kStruct:
      for (auto& child : children_) FERRY_RETURN_NOT_OK(child->AppendNull(n));
      break;
    default: {
      const int64_t width = internal::DataWidthBytes(type_);
      if (width == 0) return TypeError("a null");
      FERRY_RETURN_NOT_OK(data_.AppendZeros(n * width));
      break;
    }
  }
  FERRY_RETURN_NOT_OK(AppendValidity(false, n));
  length_ += n;
  return Status::OK();
}

Status ArrayBuilder::AppendEmpty(int64_t n) {
  if (n < 0) return Status::Invalid("negative count of elements");
  const TypeId t = type_.storage_type;
  if (is_dictionary_) {
    return Status::NotSupported("a dictionary builder has no default value: append a value");
  }
  for (int64_t i = 0; i < n; ++i) {
    switch (t) {
      case TypeId::kNull:
        FERRY_RETURN_NOT_OK(AppendNull(1));
        break;
      case TypeId::kBool:
        FERRY_RETURN_NOT_OK(AppendInt(0));
        break;
      case TypeId::kBinary:
      case TypeId::kString:
      case TypeId::kLargeBinary:
      case TypeId::kLargeString:
      case TypeId::kBinaryView:
      case TypeId::kStringView:
        FERRY_RETURN_NOT_OK(AppendBytes({}));
        break;
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kListView:
      case TypeId::kLargeListView:
      case TypeId::kMap:
        FERRY_RETURN_NOT_OK(FinishElement());
        break;
      case TypeId::kFixedSizeList:
        FERRY_RETURN_NOT_OK(children_[0]->AppendEmpty(type_.fixed_size));
        FERRY_RETURN_NOT_OK(FinishElement());
        break;
      case TypeId::kStruct:
        for (auto& child : children_) FERRY_RETURN_NOT_OK(child->AppendEmpty(1));
        FERRY_RETURN_NOT_OK(FinishElement());
        break;
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion:
        if (children_.empty()) return Status::Invalid("a union with no children has no values");
        FERRY_RETURN_NOT_OK(AppendUnion(type_.union_type_ids[0]));
        FERRY_RETURN_NOT_OK(children_[0]->AppendEmpty(1));
        break;
      case TypeId::kRunEndEncoded:
        FERRY_RETURN_NOT_OK(children_[1]->AppendEmpty(1));
        FERRY_RETURN_NOT_OK(AppendRun(1));
        break;
      default: {
        const int64_t width = internal::DataWidthBytes(type_);
        if (width == 0) return TypeError("an empty value");
        std::string zeros(static_cast<size_t>(width), '\0');
        FERRY_RETURN_NOT_OK(AppendFixed({zeros.data(), width}));
        break;
      }
    }
  }
  return Status::OK();
}

Status ArrayBuilder::AppendUnion(int8_t type_id) {
  const TypeId t = type_.storage_type;
  if (t != TypeId::kSparseUnion && t != TypeId::kDenseUnion) return TypeError("a union element");
  int64_t child = -1;
  for (size_t i = 0; i < type_.union_type_ids.size(); ++i) {
    if (type_.union_type_ids[i] == type_id) child = static_cast<int64_t>(i);
  }
  if (child < 0) {
    return Status::Invalid("union type id " + std::to_string(type_id) + " is not declared");
  }
  FERRY_RETURN_NOT_OK(data_.Append<int8_t>(type_id));
  if (t == TypeId::kDenseUnion) {
    const int64_t offset = children_[static_cast<size_t>(child)]->length();
    if (offset > std::numeric_limits<int32_t>::max()) {
      return Status::OutOfRange("dense union child exceeds 2^31-1 elements");
    }
    FERRY_RETURN_NOT_OK(offsets_.Append<int32_t>(static_cast<int32_t>(offset)));
  } else {
    for (size_t i = 0; i < children_.size(); ++i) {
      if (static_cast<int64_t>(i) != child) FERRY_RETURN_NOT_OK(children_[i]->AppendNull(1));
    }
  }
  ++length_;
  return Status::OK();
}

Status ArrayBuilder::FinishElement() {
  const TypeId t = type_.storage_type;
  if (is_dictionary_ ||
      !(internal::IsListLike(t) || t == TypeId::kFixedSizeList || t == TypeId::kStruct)) {
    return TypeError("a nested element");
  }
  if (t == TypeId::kListView || t == TypeId::kLargeListView) {
    const int64_t end = children_[0]->length();
    FERRY_RETURN_NOT_OK(AppendOffsetValue(&offsets_, list_view_start_));
    FERRY_RETURN_NOT_OK(AppendOffsetValue(&sizes_, end - list_view_start_));
    list_view_start_ = end;
  } else if (internal::IsListLike(t)) {
    FERRY_RETURN_NOT_OK(AppendOffsetValue(&offsets_, children_[0]->length()));
  } else if (t == TypeId::kFixedSizeList) {
    const int64_t want = (length_ + 1) * type_.fixed_size;
    if (children_[0]->length() != want) {
      return Status::Invalid("fixed-size list element " + std::to_string(length_) + " has " +
                             std::to_string(children_[0]->length() - length_ * type_.fixed_size) +
                             " values, expected " + std::to_string(type_.fixed_size));
    }
  } else {
    for (size_t i = 0; i < children_.size(); ++i) {
      if (children_[i]->length() != length_ + 1) {
        return Status::Invalid("struct element " + std::to_string(length_) + ": child " +
                               std::to_string(i) + " has length " +
                               std::to_string(children_[i]->length()) + ", expected " +
                               std::to_string(length_ + 1));
      }
    }
  }
  FERRY_RETURN_NOT_OK(AppendValidity(true, 1));
  ++length_;
  return Status::OK();
}

Status ArrayBuilder::AppendRun(int64_t run_length) {
  if (type_.storage_type != TypeId::kRunEndEncoded) return TypeError("a run");
  if (run_length <= 0) return Status::Invalid("a run must have a positive length");
  if (children_[1]->length() != children_[0]->length() + 1) {
    return Status::Invalid("append exactly one value to the values child before AppendRun");
  }
  int64_t end = 0;
  if (__builtin_add_overflow(last_run_end_, run_length, &end)) {
    return Status::OutOfRange("run end overflows");
  }
  FERRY_RETURN_NOT_OK(children_[0]->AppendInt(end));
  last_run_end_ = end;
  length_ = end;
  return Status::OK();
}

Status ArrayBuilder::ExtendLastRun(int64_t n) {
  if (type_.storage_type != TypeId::kRunEndEncoded) return TypeError("a run");
  if (children_[0]->length() == 0) return Status::Invalid("there is no run to extend");
  if (n <= 0) return Status::Invalid("a run can only grow by a positive count");
  ArrayBuilder* ends = children_[0].get();
  const int64_t end = last_run_end_ + n;
  FERRY_RETURN_NOT_OK(ends->CheckIntRange(end));
  // Rewrite the last run end in place.
  const int64_t width = internal::DataWidthBytes(ends->type_);
  uint8_t* slot = ends->data_.data() + (ends->length_ - 1) * width;
  if (width == 2) {
    auto v = static_cast<int16_t>(end);
    std::memcpy(slot, &v, 2);
  } else if (width == 4) {
    auto v = static_cast<int32_t>(end);
    std::memcpy(slot, &v, 4);
  } else {
    std::memcpy(slot, &end, 8);
  }
  last_run_end_ = end;
  length_ = end;
  return Status::OK();
}

Status ArrayBuilder::AppendIndex(int64_t index) {
  if (!is_dictionary_) return TypeError("a dictionary index");
  if (index < 0 || index >= dictionary_->length()) {
    return Status::OutOfRange("dictionary index " + std::to_string(index) + " is outside [0, " +
                              std::to_string(dictionary_->length()) + ")");
  }
  FERRY_RETURN_NOT_OK(CheckIntRange(index));
  const int64_t width = internal::DataWidthBytes(type_);
  FERRY_RETURN_NOT_OK(data_.Append({&index, width}));  // little-endian truncation
  FERRY_RETURN_NOT_OK(AppendValidity(true, 1));
  ++length_;
  return Status::OK();
}

Result<UniqueArray> ArrayBuilder::Finish() {
  // The exported node keeps this node's buffers alive; its children and dictionary are nodes of
  // their own, moved in.
  struct Owned {
    std::vector<HostBuffer> buffers;
  };
  auto owned = std::make_shared<Owned>();
  const TypeId t = type_.storage_type;
  const Layout& layout = type_.layout;

  for (int32_t i = 0; i < layout.n_fixed_buffers; ++i) {
    switch (layout.buffer_type[static_cast<size_t>(i)]) {
      case BufferType::kValidity:
        // No nulls: export no validity buffer at all.
        owned->buffers.push_back(null_count_ > 0 ? validity_.Finish() : HostBuffer(allocator_));
        break;
      case BufferType::kData:
        owned->buffers.push_back(t == TypeId::kBool ? bits_.Finish() : std::move(data_));
        break;
      case BufferType::kTypeId:
      case BufferType::kView:
        owned->buffers.push_back(std::move(data_));
        break;
      case BufferType::kDataOffset:
      case BufferType::kListOffset:
      case BufferType::kUnionOffset:
        owned->buffers.push_back(std::move(offsets_));
        break;
      case BufferType::kListSize:
        owned->buffers.push_back(std::move(sizes_));
        break;
      default:
        owned->buffers.emplace_back(allocator_);
        break;
    }
  }
  if (internal::IsViewType(t)) {
    HostBuffer sizes(allocator_);
    for (HostBuffer& block : variadic_) {
      FERRY_RETURN_NOT_OK(sizes.Append<int64_t>(block.size()));
    }
    for (HostBuffer& block : variadic_) owned->buffers.push_back(std::move(block));
    owned->buffers.push_back(std::move(sizes));
  }
  std::vector<const void*> pointers;
  for (size_t i = 0; i < owned->buffers.size(); ++i) {
    const HostBuffer& b = owned->buffers[i];
    const bool is_validity =
        i == 0 && layout.n_fixed_buffers > 0 && layout.buffer_type[0] == BufferType::kValidity;
    pointers.push_back(is_validity && null_count_ == 0 ? nullptr : b.data());
  }
  std::vector<UniqueArray> children;
  for (auto& child : children_) {
    FERRY_ASSIGN_OR_RAISE(UniqueArray c, child->Finish());
    children.push_back(std::move(c));
  }
  UniqueArray dictionary;
  if (dictionary_) {
    FERRY_ASSIGN_OR_RAISE(dictionary, dictionary_->Finish());
    dictionary_index_.clear();
  }
  UniqueArray out;
  const KeepAlive::Slots slots =
      KeepAlive(std::move(owned))
          .MakeNode(out.get(), length_, t == TypeId::kNull ? length_ : null_count_, 0,
                    pointers.data(), static_cast<int64_t>(pointers.size()),
                    static_cast<int64_t>(children.size()));
  for (size_t i = 0; i < children.size(); ++i) children[i].move_to(&slots.children[i]);
  if (dictionary.valid()) {
    dictionary.move_to(slots.dictionary);
    out->dictionary = slots.dictionary;
  }
  ResetBuffers();
  return out;
}

}  // namespace ferry
