// Schemas to and from their flatbuffer form, with dictionary ids assigned in pre-order.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ferry/abi/unique.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/schema_view.hpp"
#include "ipc/flatbuffers.hpp"

namespace ferry::ipc::internal {

/// The deepest nesting of fields (and of a batch's nodes) ferry encodes or decodes: deeper
/// input is refused, naming where, rather than recursed into.
inline constexpr int kMaxDepth = 64;

/// A stream's schema as ferry holds it: the root struct (one child per column, custom metadata
/// on the root), the dictionary id of every dictionary-encoded node, and what the stream
/// declared about itself. Dictionary ids follow the canonical order: pre-order, where a
/// dictionary-encoded node's id comes before the ids inside its dictionary's values.
struct StreamSchema {
  UniqueSchema root;
  /// Every dictionary-encoded node of `root` (dictionary values included) and its id.
  std::unordered_map<const ArrowSchema*, int64_t> id_of;
  /// Each id's value schema: the `dictionary` node of the encoded node (owned by `root`).
  std::map<int64_t, const ArrowSchema*> dictionary_schema;
  /// The parsed type of every node (dictionaries included), parsed once per stream.
  std::unordered_map<const ArrowSchema*, SchemaView> views;
  /// The nodes a record batch's field nodes describe, in their pre-order (children, not
  /// dictionaries): field node k of a batch belongs to preorder[k]. Likewise per dictionary id.
  struct Preorder {
    std::vector<const ArrowSchema*> nodes;
    std::vector<const SchemaView*> views;  // into `views`
  };
  Preorder preorder;
  std::map<int64_t, Preorder> dictionary_preorder;
  bool big_endian = false;
  fb::MetadataVersion version = fb::MetadataVersion::V5;
};

/// Visit the dictionary-encoded nodes under `node` in the canonical order.
void ForEachDictionaryNode(const ArrowSchema* node,
                           const std::function<void(const ArrowSchema*)>& fn);

/// Decode a verified Schema table. Errors name the field path.
Result<StreamSchema> SchemaFromFlatbuffer(const fb::Schema* schema, fb::MetadataVersion version);

/// Encode `root` (a struct schema whose children are the columns) into `builder`. Dictionary ids
/// are assigned 0, 1, ... in pre-order; `ids` receives, per dictionary-encoded node in that
/// order, the id given to it.
Result<flatbuffers::Offset<fb::Schema>> SchemaToFlatbuffer(flatbuffers::FlatBufferBuilder& builder,
                                                           const ArrowSchema* root,
                                                           std::vector<int64_t>* ids,
                                                           bool big_endian = std::endian::native ==
                                                                             std::endian::big);

/// Whether two schema trees have the same types (formats, children, dictionaries), names and
/// metadata aside.
bool SameTypes(const ArrowSchema* a, const ArrowSchema* b);

/// Custom metadata from a flatbuffer KeyValue vector (NULL gives none).
Metadata MetadataFromFlatbuffer(
    const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* pairs);

}  // namespace ferry::ipc::internal
