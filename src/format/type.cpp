// Type ids and the layouts their storage types imply.
#include "ferry/format/type.hpp"

namespace ferry {

const char* TypeIdName(TypeId id) noexcept {
  switch (id) {
    case TypeId::kUninitialized:
      return "uninitialized";
    case TypeId::kNull:
      return "null";
    case TypeId::kBool:
      return "bool";
    case TypeId::kInt8:
      return "int8";
    case TypeId::kUInt8:
      return "uint8";
    case TypeId::kInt16:
      return "int16";
    case TypeId::kUInt16:
      return "uint16";
    case TypeId::kInt32:
      return "int32";
    case TypeId::kUInt32:
      return "uint32";
    case TypeId::kInt64:
      return "int64";
    case TypeId::kUInt64:
      return "uint64";
    case TypeId::kHalfFloat:
      return "halffloat";
    case TypeId::kFloat:
      return "float";
    case TypeId::kDouble:
      return "double";
    case TypeId::kDecimal32:
      return "decimal32";
    case TypeId::kDecimal64:
      return "decimal64";
    case TypeId::kDecimal128:
      return "decimal128";
    case TypeId::kDecimal256:
      return "decimal256";
    case TypeId::kFixedSizeBinary:
      return "fixed_size_binary";
    case TypeId::kBinary:
      return "binary";
    case TypeId::kLargeBinary:
      return "large_binary";
    case TypeId::kString:
      return "string";
    case TypeId::kLargeString:
      return "large_string";
    case TypeId::kBinaryView:
      return "binary_view";
    case TypeId::kStringView:
      return "string_view";
    case TypeId::kDate32:
      return "date32";
    case TypeId::kDate64:
      return "date64";
    case TypeId::kTime32:
      return "time32";
    case TypeId::kTime64:
      return "time64";
    case TypeId::kTimestamp:
      return "timestamp";
    case TypeId::kDuration:
      return "duration";
    case TypeId::kIntervalMonths:
      return "interval_months";
    case TypeId::kIntervalDayTime:
      return "interval_day_time";
    case TypeId::kIntervalMonthDayNano:
      return "interval_month_day_nano";
    case TypeId::kList:
      return "list";
    case TypeId::kLargeList:
      return "large_list";
    case TypeId::kListView:
      return "list_view";
    case TypeId::kLargeListView:
      return "large_list_view";
    case TypeId::kFixedSizeList:
      return "fixed_size_list";
    case TypeId::kStruct:
      return "struct";
    case TypeId::kMap:
      return "map";
    case TypeId::kSparseUnion:
      return "sparse_union";
    case TypeId::kDenseUnion:
      return "dense_union";
    case TypeId::kRunEndEncoded:
      return "run_end_encoded";
    case TypeId::kDictionary:
      return "dictionary";
    case TypeId::kExtension:
      return "extension";
  }
  return "unknown";
}

Layout LayoutOf(TypeId storage_type) noexcept {
  Layout l;
  auto set = [&l](std::initializer_list<std::pair<BufferType, int32_t>> buffers, int32_t children) {
    int32_t i = 0;
    for (const auto& [type, bits] : buffers) {
      l.buffer_type[static_cast<size_t>(i)] = type;
      l.element_size_bits[static_cast<size_t>(i)] = bits;
      ++i;
    }
    l.n_fixed_buffers = i;
    l.n_children = children;
  };
  using B = BufferType;
  switch (storage_type) {
    case TypeId::kNull:
      set({}, 0);
      break;
    case TypeId::kBool:
      set({{B::kValidity, 1}, {B::kData, 1}}, 0);
      break;
    case TypeId::kInt8:
    case TypeId::kUInt8:
      set({{B::kValidity, 1}, {B::kData, 8}}, 0);
      break;
    case TypeId::kInt16:
    case TypeId::kUInt16:
    case TypeId::kHalfFloat:
      set({{B::kValidity, 1}, {B::kData, 16}}, 0);
      break;
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kFloat:
    case TypeId::kDate32:
    case TypeId::kTime32:
    case TypeId::kIntervalMonths:
    case TypeId::kDecimal32:
      set({{B::kValidity, 1}, {B::kData, 32}}, 0);
      break;
    case TypeId::kInt64:
    case TypeId::kUInt64:
    case TypeId::kDouble:
    case TypeId::kDate64:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
    case TypeId::kIntervalDayTime:
    case TypeId::kDecimal64:
      set({{B::kValidity, 1}, {B::kData, 64}}, 0);
      break;
    case TypeId::kDecimal128:
    case TypeId::kIntervalMonthDayNano:
      set({{B::kValidity, 1}, {B::kData, 128}}, 0);
      break;
    case TypeId::kDecimal256:
      set({{B::kValidity, 1}, {B::kData, 256}}, 0);
      break;
    case TypeId::kFixedSizeBinary:
      set({{B::kValidity, 1}, {B::kData, 0}}, 0);
      break;
    case TypeId::kBinary:
    case TypeId::kString:
      set({{B::kValidity, 1}, {B::kDataOffset, 32}, {B::kData, 0}}, 0);
      break;
    case TypeId::kLargeBinary:
    case TypeId::kLargeString:
      set({{B::kValidity, 1}, {B::kDataOffset, 64}, {B::kData, 0}}, 0);
      break;
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      set({{B::kValidity, 1}, {B::kView, 128}}, 0);
      break;
    case TypeId::kList:
    case TypeId::kMap:
      set({{B::kValidity, 1}, {B::kListOffset, 32}}, 1);
      break;
    case TypeId::kLargeList:
      set({{B::kValidity, 1}, {B::kListOffset, 64}}, 1);
      break;
    case TypeId::kListView:
      set({{B::kValidity, 1}, {B::kListOffset, 32}, {B::kListSize, 32}}, 1);
      break;
    case TypeId::kLargeListView:
      set({{B::kValidity, 1}, {B::kListOffset, 64}, {B::kListSize, 64}}, 1);
      break;
    case TypeId::kFixedSizeList:
      set({{B::kValidity, 1}}, 1);
      break;
    case TypeId::kStruct:
      set({{B::kValidity, 1}}, -1);
      break;
    case TypeId::kSparseUnion:
      set({{B::kTypeId, 8}}, -1);
      break;
    case TypeId::kDenseUnion:
      set({{B::kTypeId, 8}, {B::kUnionOffset, 32}}, -1);
      break;
    case TypeId::kRunEndEncoded:
      set({}, 2);
      break;
    case TypeId::kUninitialized:
    case TypeId::kDictionary:
    case TypeId::kExtension:
      break;
  }
  return l;
}

}  // namespace ferry
