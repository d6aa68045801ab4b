// ArrayBuilder: appends for every type, and export of the built buffers as an ArrowArray tree.
// Over 600 lines: one builder serves every Arrow type through state that a split would scatter.
#include "ferry/format/builder.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "ferry/core/keep_alive.hpp"
#include "ferry/format/decimal.hpp"
#include "half.hpp"

namespace ferry {

namespace {

constexpr int kMaxDepth = 64;

bool IsView(TypeId t) { return t == TypeId::kBinaryView || t == TypeId::kStringView; }

bool IsBinaryLike(TypeId t) {
  switch (t) {
    case TypeId::kBinary:
    case TypeId::kString:
    case TypeId::kLargeBinary:
    case TypeId::kLargeString:
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return true;
    default:
      return false;
  }
}

bool IsDecimal(TypeId t) {
  return t == TypeId::kDecimal32 || t == TypeId::kDecimal64 || t == TypeId::kDecimal128 ||
         t == TypeId::kDecimal256;
}

bool IsListLike(TypeId t) {
  return t == TypeId::kList || t == TypeId::kLargeList || t == TypeId::kListView ||
         t == TypeId::kLargeListView || t == TypeId::kMap;
}

int64_t DataWidth(const SchemaView& t) {
  const int32_t bits = t.layout.element_size_bits[1];
  return t.layout.n_fixed_buffers >= 2 && t.layout.buffer_type[1] == BufferType::kData && bits >= 8
             ? bits / 8
             : 0;
}

}  // namespace

ArrayBuilder::~ArrayBuilder() = default;

Result<std::unique_ptr<ArrayBuilder>> ArrayBuilder::Make(const ArrowSchema* schema,
                                                         Allocator* allocator) {
  std::unique_ptr<ArrayBuilder> b(new ArrayBuilder());
  FERRY_RETURN_NOT_OK(b->Init(schema, allocator ? allocator : DefaultAllocator(), 0));
  return b;
}

Status ArrayBuilder::Init(const ArrowSchema* schema, Allocator* allocator, int depth) {
  if (depth > kMaxDepth) return Status::Invalid("schema nests deeper than 64 levels");
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
    FERRY_RETURN_NOT_OK(data_.AppendZeros(n * DataWidth(type_)));
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
      const int64_t width = DataWidth(type_);
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
        const int64_t width = DataWidth(type_);
        if (width == 0) return TypeError("an empty value");
        std::string zeros(static_cast<size_t>(width), '\0');
        FERRY_RETURN_NOT_OK(AppendFixed({zeros.data(), width}));
        break;
      }
    }
  }
  return Status::OK();
}

Status ArrayBuilder::CheckIntRange(int64_t v) const {
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
  switch (type_.storage_type) {
    case TypeId::kInt8:
      lo = INT8_MIN;
      hi = INT8_MAX;
      break;
    case TypeId::kUInt8:
      lo = 0;
      hi = UINT8_MAX;
      break;
    case TypeId::kInt16:
      lo = INT16_MIN;
      hi = INT16_MAX;
      break;
    case TypeId::kUInt16:
      lo = 0;
      hi = UINT16_MAX;
      break;
    case TypeId::kInt32:
    case TypeId::kDate32:
    case TypeId::kTime32:
    case TypeId::kIntervalMonths:
      lo = INT32_MIN;
      hi = INT32_MAX;
      break;
    case TypeId::kUInt32:
      lo = 0;
      hi = UINT32_MAX;
      break;
    case TypeId::kUInt64:
      lo = 0;
      break;
    case TypeId::kBool:
      lo = 0;
      hi = 1;
      break;
    default:
      break;
  }
  if (v < lo || v > hi) {
    return Status::OutOfRange("value " + std::to_string(v) + " is out of range for " +
                              TypeIdName(type_.storage_type));
  }
  return Status::OK();
}

Status ArrayBuilder::AppendDictionaryKey(std::string key,
                                         const std::function<Status(ArrayBuilder*)>& append) {
  auto it = dictionary_index_.find(key);
  int64_t index;
  if (it != dictionary_index_.end()) {
    index = it->second;
  } else {
    index = dictionary_->length();
    FERRY_RETURN_NOT_OK(append(dictionary_.get()));
    dictionary_index_.emplace(std::move(key), index);
  }
  return AppendIndex(index);
}

Status ArrayBuilder::AppendInt(int64_t value) {
  if (is_dictionary_) {
    std::string key(1, 'i');
    key.append(reinterpret_cast<const char*>(&value), sizeof(value));
    return AppendDictionaryKey(std::move(key),
                               [value](ArrayBuilder* d) { return d->AppendInt(value); });
  }
  const TypeId t = type_.storage_type;
  if (IsDecimal(t)) return AppendDecimal(std::to_string(value));
  if (t == TypeId::kHalfFloat || t == TypeId::kFloat || t == TypeId::kDouble) {
    return AppendDouble(static_cast<double>(value));
  }
  FERRY_RETURN_NOT_OK(CheckIntRange(value));
  switch (t) {
    case TypeId::kBool:
      FERRY_RETURN_NOT_OK(bits_.Append(value != 0));
      FERRY_RETURN_NOT_OK(AppendValidity(true, 1));
      ++length_;
      return Status::OK();
    case TypeId::kInt8:
    case TypeId::kUInt8: {
      auto v = static_cast<uint8_t>(value);
      return AppendFixed({&v, 1});
    }
    case TypeId::kInt16:
    case TypeId::kUInt16: {
      auto v = static_cast<uint16_t>(value);
      return AppendFixed({&v, 2});
    }
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kDate32:
    case TypeId::kTime32:
    case TypeId::kIntervalMonths: {
      auto v = static_cast<uint32_t>(value);
      return AppendFixed({&v, 4});
    }
    case TypeId::kInt64:
    case TypeId::kUInt64:
    case TypeId::kDate64:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
      return AppendFixed({&value, 8});
    default:
      return TypeError("an integer");
  }
}

Status ArrayBuilder::AppendUInt(uint64_t value) {
  if (type_.storage_type == TypeId::kUInt64 && !is_dictionary_) return AppendFixed({&value, 8});
  if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::OutOfRange("value " + std::to_string(value) + " is out of range for " +
                              TypeIdName(type_.storage_type));
  }
  return AppendInt(static_cast<int64_t>(value));
}

Status ArrayBuilder::AppendDouble(double value) {
  if (is_dictionary_) {
    std::string key(1, 'd');
    key.append(reinterpret_cast<const char*>(&value), sizeof(value));
    return AppendDictionaryKey(std::move(key),
                               [value](ArrayBuilder* d) { return d->AppendDouble(value); });
  }
  switch (type_.storage_type) {
    case TypeId::kHalfFloat: {
      uint16_t h = internal::DoubleToHalf(value);
      return AppendFixed({&h, 2});
    }
    case TypeId::kFloat: {
      auto f = static_cast<float>(value);
      return AppendFixed({&f, 4});
    }
    case TypeId::kDouble:
      return AppendFixed({&value, 8});
    default:
      if (std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < 9.2e18) {
        return AppendInt(static_cast<int64_t>(value));
      }
      return TypeError("a floating-point value");
  }
}

Status ArrayBuilder::AppendBytes(std::string_view value) {
  if (is_dictionary_) {
    std::string key(1, 'b');
    key.append(value);
    return AppendDictionaryKey(std::move(key),
                               [value](ArrayBuilder* d) { return d->AppendBytes(value); });
  }
  const TypeId t = type_.storage_type;
  const auto n = static_cast<int64_t>(value.size());
  if (IsView(t)) {
    if (n > std::numeric_limits<int32_t>::max()) {
      return Status::OutOfRange("a view value is limited to 2^31-1 bytes");
    }
    uint8_t view[16] = {};
    const auto size = static_cast<int32_t>(n);
    std::memcpy(view, &size, 4);
    if (n <= 12) {
      if (n > 0) std::memcpy(view + 4, value.data(), value.size());
    } else {
      constexpr int64_t kBlock = 32 << 20;
      if (variadic_.empty() || variadic_.back().size() + n > std::max<int64_t>(kBlock, n)) {
        variadic_.emplace_back(allocator_);
      }
      HostBuffer& block = variadic_.back();
      const auto index = static_cast<int32_t>(variadic_.size() - 1);
      const auto offset = static_cast<int32_t>(block.size());
      FERRY_RETURN_NOT_OK(block.Append({value.data(), n}));
      std::memcpy(view + 4, value.data(), 4);
      std::memcpy(view + 8, &index, 4);
      std::memcpy(view + 12, &offset, 4);
    }
    return AppendFixed({view, 16});
  }
  if (IsBinaryLike(t)) {
    FERRY_RETURN_NOT_OK(data_.Append({value.data(), n}));
    FERRY_RETURN_NOT_OK(AppendOffsetValue(&offsets_, data_.size()));
    FERRY_RETURN_NOT_OK(AppendValidity(true, 1));
    ++length_;
    return Status::OK();
  }
  const int64_t width = DataWidth(type_);
  if (width == 0 || t == TypeId::kBool) return TypeError("bytes");
  if (n != width) {
    return Status::Invalid("expected " + std::to_string(width) + " bytes for " + TypeIdName(t) +
                           ", got " + std::to_string(n));
  }
  return AppendFixed({value.data(), n});
}

Status ArrayBuilder::AppendDecimal(std::string_view text) {
  if (!IsDecimal(type_.storage_type) || is_dictionary_) return TypeError("a decimal");
  uint8_t bytes[32];
  FERRY_RETURN_NOT_OK(ParseDecimal(text, type_.decimal_precision, type_.decimal_scale,
                                   type_.decimal_bitwidth, bytes));
  return AppendFixed({bytes, type_.decimal_bitwidth / 8});
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
  if (is_dictionary_ || !(IsListLike(t) || t == TypeId::kFixedSizeList || t == TypeId::kStruct)) {
    return TypeError("a nested element");
  }
  if (t == TypeId::kListView || t == TypeId::kLargeListView) {
    const int64_t end = children_[0]->length();
    FERRY_RETURN_NOT_OK(AppendOffsetValue(&offsets_, list_view_start_));
    FERRY_RETURN_NOT_OK(AppendOffsetValue(&sizes_, end - list_view_start_));
    list_view_start_ = end;
  } else if (IsListLike(t)) {
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
  const int64_t width = DataWidth(ends->type_);
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
  const int64_t width = DataWidth(type_);
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
  if (IsView(t)) {
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
