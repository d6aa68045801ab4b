// Families of Arrow types that views, validation and builders treat alike.
#pragma once

#include <cstdint>

#include "ferry/format/schema_view.hpp"

namespace ferry::internal {

/// Signed and unsigned integers of 8 to 64 bits.
inline bool IsIntegerType(TypeId t) {
  switch (t) {
    case TypeId::kInt8:
    case TypeId::kUInt8:
    case TypeId::kInt16:
    case TypeId::kUInt16:
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kInt64:
    case TypeId::kUInt64:
      return true;
    default:
      return false;
  }
}

/// The types whose values must be UTF-8.
inline bool IsStringType(TypeId t) {
  return t == TypeId::kString || t == TypeId::kLargeString || t == TypeId::kStringView;
}

/// The binary and string views, whose values live in variadic buffers.
inline bool IsViewType(TypeId t) { return t == TypeId::kBinaryView || t == TypeId::kStringView; }

/// Every variable-length binary or string type, views included.
inline bool IsBinaryLike(TypeId t) {
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

/// Decimals of every width.
inline bool IsDecimalType(TypeId t) {
  return t == TypeId::kDecimal32 || t == TypeId::kDecimal64 || t == TypeId::kDecimal128 ||
         t == TypeId::kDecimal256;
}

/// Lists, list views and maps: one child of values.
inline bool IsListLike(TypeId t) {
  return t == TypeId::kList || t == TypeId::kLargeList || t == TypeId::kListView ||
         t == TypeId::kLargeListView || t == TypeId::kMap;
}

/// The width in bytes of one value of `t`'s data buffer, or 0 where it has none or packs
/// values in bits.
inline int64_t DataWidthBytes(const SchemaView& t) {
  const int32_t bits = t.layout.element_size_bits[1];
  return t.layout.n_fixed_buffers >= 2 && t.layout.buffer_type[1] == BufferType::kData && bits >= 8
             ? bits / 8
             : 0;
}

}  // namespace ferry::internal
