// SchemaView: one ArrowSchema node parsed, and readable descriptions of schema trees.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/format/format_string.hpp"
#include "ferry/format/type.hpp"

namespace ferry {

/// A parsed, non-owning view of one `ArrowSchema` node (not its children). String views point
/// into the schema's format and metadata strings, so the schema must outlive this view.
/// Building it costs one pass over the format string and one over the metadata.
struct FERRY_EXPORT SchemaView {
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

/// A readable type description of a schema tree, e.g. `list<item: struct<a: int32, b: string>>`,
/// `timestamp[us, tz=UTC]`, `dictionary<values=string, indices=int8, ordered>`.
FERRY_EXPORT Result<std::string> SchemaToString(const ArrowSchema* schema);

/// The indices of the columns (children of the struct `schema`) that `names` name, increasing
/// and each once, as a column projection takes them (ipc::ReadOptions::columns). A name that is
/// no column's and is all digits is an index. EINVAL names an unknown column and lists the
/// schema's; ERANGE an index past the last column.
FERRY_EXPORT Result<std::vector<int32_t>> ColumnIndices(const ArrowSchema* schema,
                                                        const std::vector<std::string>& names);

}  // namespace ferry
