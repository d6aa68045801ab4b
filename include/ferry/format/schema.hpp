// Schema trees: Field (an owning description that exports to, and imports from, ArrowSchema),
// deep copies, and structural equality (SchemaEquals).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/metadata.hpp"

namespace ferry {

/// One schema node and its subtree as plain owned values: copyable, cheap to build in code.
/// Export builds a fresh ArrowSchema tree (one allocation per node) whose release frees it all
/// exactly once; Import deep-copies a foreign tree without taking ownership of it.
struct FERRY_EXPORT Field {
  std::string format;
  std::string name;
  int64_t flags = ARROW_FLAG_NULLABLE;
  Metadata metadata;
  std::vector<Field> children;
  /// The dictionary's value field when dictionary-encoded (then `format` is the index type).
  std::shared_ptr<const Field> dictionary;

  /// A field of any format; the format is checked when exported.
  static Field Make(std::string format, std::string name, std::vector<Field> children = {});
  /// A dictionary-encoded field: `index_format` indices into `values`.
  static Field Dictionary(std::string name, std::string index_format, Field values,
                          bool ordered = false);
  /// An extension field over `storage` (adds the ARROW:extension:* metadata).
  static Field Extension(std::string name, std::string extension_name,
                         std::string extension_metadata, Field storage);

  /// Return a copy with other flags (e.g. 0 for non-nullable).
  Field WithFlags(int64_t new_flags) const;

  /// Build an ArrowSchema tree; checks every node with SchemaView::Make.
  Result<UniqueSchema> Export() const;
  /// Deep-copy a live ArrowSchema tree.
  static Result<Field> Import(const ArrowSchema* schema);
};

/// Deep-copy a schema tree into a fresh, independently released ArrowSchema.
FERRY_EXPORT Result<UniqueSchema> CopySchema(const ArrowSchema* schema);

/// Whether two schema trees describe the same data, as Arrow C++'s `Schema::Equals` decides:
/// node by node, the parsed format ("d:10,2" is "d:10,2,128"), names, nullability, the
/// dictionary-ordered and map-keys-sorted flags, children, dictionaries and extension types, and
/// with `check_metadata` every node's key-value metadata (in any order) and the child names a
/// list, map or run-end-encoded type fixes by convention ("item", "entries"). The caller owns
/// both trees; it costs one parse of each node, and errors name a malformed node.
FERRY_EXPORT Result<bool> SchemaEquals(const ArrowSchema* a, const ArrowSchema* b,
                                       bool check_metadata = false);

}  // namespace ferry
