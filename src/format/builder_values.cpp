// ArrayBuilder's appends of scalar values: integers (range-checked against the type), floating
// point, bytes and strings, decimals from text, and dictionary keys.
#include <cmath>
#include <cstring>
#include <limits>

#include "ferry/format/builder.hpp"
#include "ferry/format/decimal.hpp"
#include "half.hpp"
#include "type_kinds.hpp"

namespace ferry {

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
  if (internal::IsDecimalType(t)) return AppendDecimal(std::to_string(value));
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
  if (internal::IsViewType(t)) {
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
  if (internal::IsBinaryLike(t)) {
    FERRY_RETURN_NOT_OK(data_.Append({value.data(), n}));
    FERRY_RETURN_NOT_OK(AppendOffsetValue(&offsets_, data_.size()));
    FERRY_RETURN_NOT_OK(AppendValidity(true, 1));
    ++length_;
    return Status::OK();
  }
  const int64_t width = internal::DataWidthBytes(type_);
  if (width == 0 || t == TypeId::kBool) return TypeError("bytes");
  if (n != width) {
    return Status::Invalid("expected " + std::to_string(width) + " bytes for " + TypeIdName(t) +
                           ", got " + std::to_string(n));
  }
  return AppendFixed({value.data(), n});
}

Status ArrayBuilder::AppendDecimal(std::string_view text) {
  if (!internal::IsDecimalType(type_.storage_type) || is_dictionary_) return TypeError("a decimal");
  uint8_t bytes[32];
  FERRY_RETURN_NOT_OK(ParseDecimal(text, type_.decimal_precision, type_.decimal_scale,
                                   type_.decimal_bitwidth, bytes));
  return AppendFixed({bytes, type_.decimal_bitwidth / 8});
}

}  // namespace ferry
