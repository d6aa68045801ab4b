// Arrow types as the C data interface spells them: parsing and printing format strings, and the
// physical layout each type implies.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
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
const char* TypeIdName(TypeId id) noexcept;

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
struct Layout {
  int32_t n_fixed_buffers = 0;
  std::array<BufferType, 3> buffer_type{};
  std::array<int32_t, 3> element_size_bits{};
  int32_t n_children = -1;  ///< required child count, -1 when any count is allowed (struct, union)
};

/// A parsed, non-owning view of one `ArrowSchema` node (not its children). String views point
/// into the schema's format and metadata strings, so the schema must outlive this view.
/// Building it costs one pass over the format string and one over the metadata.
struct SchemaView {
  const ArrowSchema* schema = nullptr;
  /// The logical type: kDictionary or kExtension where those apply, otherwise the storage type.
  TypeId type = TypeId::kUninitialized;
  /// The physical type that decides the layout (a dictionary's index type, an extension's storage).
  TypeId storage_type = TypeId::kUninitialized;
  /// The buffers and children `storage_type` implies.
  Layout layout;
  /// Byte width of fixed-size binary; list size of fixed-size list.
  int32_t fixed_size = 0;
  int32_t decimal_bitwidth = 0;
  int32_t decimal_precision = 0;
  int32_t decimal_scale = 0;
  TimeUnit time_unit = TimeUnit::kSecond;
  std::string_view timezone;
  /// Union type ids as given in the format, "" when the union has none; see union_type_ids.
  std::string_view union_type_ids_text;
  /// Parsed union type ids, one per child, in child order.
  std::vector<int8_t> union_type_ids;
  std::string_view extension_name;
  std::string_view extension_metadata;
  bool nullable = false;
  bool dictionary_ordered = false;
  bool map_keys_sorted = false;

  /// Parse `schema` (one node). Fails on a released schema, a bad format string, metadata that
  /// runs past its declared lengths, or a child count the type forbids.
  static Result<SchemaView> Make(const ArrowSchema* schema);
};

/// The parts of a format string alone, without the rest of a schema node.
struct FormatInfo {
  TypeId type = TypeId::kUninitialized;
  int32_t fixed_size = 0;
  int32_t decimal_bitwidth = 0;
  int32_t decimal_precision = 0;
  int32_t decimal_scale = 0;
  TimeUnit time_unit = TimeUnit::kSecond;
  std::string_view timezone;
  std::string_view union_type_ids_text;
  std::vector<int8_t> union_type_ids;
};

/// Parse one format string. Errors name the character, its 0-based position and why, for
/// example `format "tsz:": unexpected 'z' at position 2: expected a time unit (s, m, u, n)`.
Result<FormatInfo> ParseFormat(std::string_view format);

/// Emit the format string for `info` (the inverse of ParseFormat).
Result<std::string> FormatToString(const FormatInfo& info);

/// The layout of a storage type.
Layout LayoutOf(TypeId storage_type) noexcept;

/// A readable type description of a schema tree, e.g. `list<item: struct<a: int32, b: string>>`,
/// `timestamp[us, tz=UTC]`, `dictionary<values=string, indices=int8, ordered>`.
Result<std::string> SchemaToString(const ArrowSchema* schema);

}  // namespace ferry
