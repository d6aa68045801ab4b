// Arrow type ids, time units and buffer types, and the physical layout each storage type
// implies (format strings: format_string.hpp; schema nodes: schema_view.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

namespace ferry {

/// Every Arrow type ferry knows. Dictionary and extension are not format strings of their own:
/// they come from `ArrowSchema.dictionary` and the `ARROW:extension:*` metadata.
enum class TypeId : int32_t {
  kUninitialized = 0,
  kNull,
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kHalfFloat,
  kFloat,
  kDouble,
  kDecimal32,
  kDecimal64,
  kDecimal128,
  kDecimal256,
  kFixedSizeBinary,
  kBinary,
  kLargeBinary,
  kString,
  kLargeString,
  kBinaryView,
  kStringView,
  kDate32,
  kDate64,
  kTime32,
  kTime64,
  kTimestamp,
  kDuration,
  kIntervalMonths,
  kIntervalDayTime,
  kIntervalMonthDayNano,
  kList,
  kLargeList,
  kListView,
  kLargeListView,
  kFixedSizeList,
  kStruct,
  kMap,
  kSparseUnion,
  kDenseUnion,
  kRunEndEncoded,
  kDictionary,
  kExtension,
};

/// A short stable name for a type id ("int32", "large_list_view", ...).
FERRY_EXPORT const char* TypeIdName(TypeId id) noexcept;

/// The unit of time, timestamp and duration types.
enum class TimeUnit : int8_t { kSecond = 0, kMilli = 1, kMicro = 2, kNano = 3 };

/// What a buffer of a layout holds.
enum class BufferType : int8_t {
  kNone = 0,
  kValidity,      ///< one bit per element, 1 = valid
  kTypeId,        ///< int8 union type ids
  kUnionOffset,   ///< int32 dense-union child offsets
  kDataOffset,    ///< int32 or int64 offsets into a data buffer (binary, string)
  kData,          ///< fixed-width values or variable-length bytes
  kListOffset,    ///< int32 or int64 offsets into a child (list, list view, map)
  kListSize,      ///< int32 or int64 sizes (list views)
  kView,          ///< 16-byte binary/string view structs
  kVariadicData,  ///< one of the data buffers of a view type
  kVariadicSize,  ///< int64 sizes of the variadic data buffers (last buffer of a view type)
};

/// The physical layout implied by a storage type: the fixed buffers (at most three) and their
/// element widths in bits (0 when not fixed, 1 for bit-packed). View types add
/// `n_variadic` data buffers plus one sizes buffer after the fixed ones.
struct FERRY_EXPORT Layout {
  int32_t n_fixed_buffers = 0;
  std::array<BufferType, 3> buffer_type{};
  std::array<int32_t, 3> element_size_bits{};
  int32_t n_children = -1;  ///< required child count, -1 when any count is allowed (struct, union)
};

/// The layout of a storage type.
FERRY_EXPORT Layout LayoutOf(TypeId storage_type) noexcept;

}  // namespace ferry
