// Field export/import (owned schema trees through the C data interface), and SchemaEquals.
#include "ferry/format/schema.hpp"

#include <algorithm>
#include <new>

#include "ferry/format/schema_view.hpp"

namespace ferry {

namespace {

// Everything one exported node owns; children are owned by their own nodes' private data.
struct ExportedNode {
  std::string format;
  std::string name;
  std::string metadata;
  std::vector<ArrowSchema*> children;
  ArrowSchema* dictionary = nullptr;
};

void ReleaseExported(ArrowSchema* schema) {
  if (schema == nullptr || schema->release == nullptr) return;
  auto* node = static_cast<ExportedNode*>(schema->private_data);
  for (ArrowSchema* child : node->children) {
    if (child->release != nullptr) child->release(child);
    delete child;
  }
  if (node->dictionary != nullptr) {
    if (node->dictionary->release != nullptr) node->dictionary->release(node->dictionary);
    delete node->dictionary;
  }
  delete node;
  schema->release = nullptr;
  schema->private_data = nullptr;
}

Status ExportInto(const Field& field, ArrowSchema* out, int depth) {
  if (depth > 64) return Status::Invalid("schema nests deeper than 64 levels");
  auto* node = new (std::nothrow) ExportedNode();
  if (node == nullptr) return Status::OutOfMemory("exporting a schema node");
  node->format = field.format;
  node->name = field.name;
  if (!field.metadata.empty()) node->metadata = EncodeMetadata(field.metadata);
  out->format = node->format.c_str();
  out->name = node->name.c_str();
  out->metadata = field.metadata.empty() ? nullptr : node->metadata.data();
  out->flags = field.flags;
  out->n_children = static_cast<int64_t>(field.children.size());
  out->dictionary = nullptr;
  out->private_data = node;
  out->release = &ReleaseExported;
  node->children.reserve(field.children.size());
  for (const Field& child : field.children) {
    auto* c = new (std::nothrow) ArrowSchema{};
    if (c == nullptr) return Status::OutOfMemory("exporting a schema node");
    node->children.push_back(c);
    FERRY_RETURN_NOT_OK(ExportInto(child, c, depth + 1));
  }
  out->children = node->children.empty() ? nullptr : node->children.data();
  if (field.dictionary != nullptr) {
    node->dictionary = new (std::nothrow) ArrowSchema{};
    if (node->dictionary == nullptr) return Status::OutOfMemory("exporting a dictionary");
    FERRY_RETURN_NOT_OK(ExportInto(*field.dictionary, node->dictionary, depth + 1));
    out->dictionary = node->dictionary;
  }
  return Status::OK();
}

Status CheckTree(const ArrowSchema* schema, int depth) {
  if (depth > 64) return Status::Invalid("schema nests deeper than 64 levels");
  FERRY_RETURN_NOT_OK(SchemaView::Make(schema).status());
  for (int64_t i = 0; i < schema->n_children; ++i) {
    FERRY_RETURN_NOT_OK(CheckTree(schema->children[i], depth + 1));
  }
  if (schema->dictionary != nullptr) FERRY_RETURN_NOT_OK(CheckTree(schema->dictionary, depth + 1));
  return Status::OK();
}

Status ImportInto(const ArrowSchema* schema, Field* out, int depth) {
  if (depth > 64) return Status::Invalid("schema nests deeper than 64 levels");
  if (schema == nullptr || schema->release == nullptr) {
    return Status::Invalid("schema is NULL or released");
  }
  out->format = schema->format == nullptr ? "" : schema->format;
  out->name = schema->name == nullptr ? "" : schema->name;
  out->flags = schema->flags;
  FERRY_ASSIGN_OR_RAISE(MetadataView pairs, DecodeMetadata(schema->metadata));
  for (const auto& [k, v] : pairs) out->metadata.emplace_back(std::string(k), std::string(v));
  if (schema->n_children < 0 || (schema->n_children > 0 && schema->children == nullptr)) {
    return Status::Invalid("schema node \"" + out->name + "\" has inconsistent children");
  }
  out->children.resize(static_cast<size_t>(schema->n_children));
  for (int64_t i = 0; i < schema->n_children; ++i) {
    FERRY_RETURN_NOT_OK(
        ImportInto(schema->children[i], &out->children[static_cast<size_t>(i)], depth + 1));
  }
  if (schema->dictionary != nullptr) {
    auto dict = std::make_shared<Field>();
    FERRY_RETURN_NOT_OK(ImportInto(schema->dictionary, dict.get(), depth + 1));
    out->dictionary = std::move(dict);
  }
  return Status::OK();
}

// How a node is compared besides its type: a field by its name and nullability; a child whose
// name its parent's type fixes by convention by its nullability (and its name only with the
// metadata); a dictionary's values by neither (Arrow's dictionary type has a value type, not a
// value field).
enum class Role { kField, kConventionalChild, kMapEntries, kDictionaryValues };

// The types whose children are named by convention, not by the data ("item" or "element").
bool ChildNamesByConvention(TypeId storage) {
  switch (storage) {
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kListView:
    case TypeId::kLargeListView:
    case TypeId::kFixedSizeList:
    case TypeId::kRunEndEncoded:
      return true;
    default:
      return false;
  }
}

Result<bool> SameMetadata(const char* a, const char* b) {
  FERRY_ASSIGN_OR_RAISE(MetadataView pa, DecodeMetadata(a));
  FERRY_ASSIGN_OR_RAISE(MetadataView pb, DecodeMetadata(b));
  if (pa.size() != pb.size()) return false;
  std::sort(pa.begin(), pa.end());
  std::sort(pb.begin(), pb.end());
  return pa == pb;
}

Result<bool> SameNode(const ArrowSchema* a, const ArrowSchema* b, bool check_metadata, Role role,
                      int depth) {
  if (depth > 64) return Status::Invalid("schema nests deeper than 64 levels");
  FERRY_ASSIGN_OR_RAISE(SchemaView va, SchemaView::Make(a));
  FERRY_ASSIGN_OR_RAISE(SchemaView vb, SchemaView::Make(b));
  // The format's parts, not its text, and the extension type, which lives in the metadata.
  if (va.type != vb.type || va.storage_type != vb.storage_type || va.fixed_size != vb.fixed_size ||
      va.decimal_bitwidth != vb.decimal_bitwidth || va.decimal_precision != vb.decimal_precision ||
      va.decimal_scale != vb.decimal_scale || va.time_unit != vb.time_unit ||
      va.timezone != vb.timezone || va.union_type_ids != vb.union_type_ids ||
      va.extension_name != vb.extension_name || va.extension_metadata != vb.extension_metadata) {
    return false;
  }
  // Arrow compares the names a type fixes by convention only with the metadata.
  if ((role == Role::kField ||
       (check_metadata && (role == Role::kConventionalChild || role == Role::kMapEntries))) &&
      std::string_view(a->name == nullptr ? "" : a->name) !=
          std::string_view(b->name == nullptr ? "" : b->name)) {
    return false;
  }
  if (role != Role::kDictionaryValues && va.nullable != vb.nullable) return false;
  if (va.storage_type == TypeId::kMap && va.map_keys_sorted != vb.map_keys_sorted) return false;
  if ((a->dictionary == nullptr) != (b->dictionary == nullptr)) return false;
  if (a->dictionary != nullptr && va.dictionary_ordered != vb.dictionary_ordered) return false;
  if (check_metadata) {
    FERRY_ASSIGN_OR_RAISE(bool same, SameMetadata(a->metadata, b->metadata));
    if (!same) return false;
  }
  if (a->n_children != b->n_children) return false;
  Role child_role = Role::kField;
  if (role == Role::kMapEntries || ChildNamesByConvention(va.storage_type)) {
    child_role = Role::kConventionalChild;
  } else if (va.storage_type == TypeId::kMap) {
    child_role = Role::kMapEntries;
  }
  for (int64_t i = 0; i < a->n_children; ++i) {
    FERRY_ASSIGN_OR_RAISE(
        bool same, SameNode(a->children[i], b->children[i], check_metadata, child_role, depth + 1));
    if (!same) return false;
  }
  if (a->dictionary == nullptr) return true;
  return SameNode(a->dictionary, b->dictionary, check_metadata, Role::kDictionaryValues, depth + 1);
}

}  // namespace

Field Field::Make(std::string format, std::string name, std::vector<Field> children) {
  Field f;
  f.format = std::move(format);
  f.name = std::move(name);
  f.children = std::move(children);
  return f;
}

Field Field::Dictionary(std::string name, std::string index_format, Field values, bool ordered) {
  Field f = Make(std::move(index_format), std::move(name));
  if (ordered) f.flags |= ARROW_FLAG_DICTIONARY_ORDERED;
  f.dictionary = std::make_shared<const Field>(std::move(values));
  return f;
}

Field Field::Extension(std::string name, std::string extension_name, std::string extension_metadata,
                       Field storage) {
  Field f = std::move(storage);
  f.name = std::move(name);
  f.metadata.emplace_back("ARROW:extension:name", std::move(extension_name));
  f.metadata.emplace_back("ARROW:extension:metadata", std::move(extension_metadata));
  return f;
}

Field Field::WithFlags(int64_t new_flags) const {
  Field f = *this;
  f.flags = new_flags;
  return f;
}

Result<UniqueSchema> Field::Export() const {
  UniqueSchema out;
  Status st = ExportInto(*this, out.get(), 0);
  if (!st.ok()) return st;  // `out` releases whatever was built
  FERRY_RETURN_NOT_OK(CheckTree(out.get(), 0));
  return out;
}

Result<Field> Field::Import(const ArrowSchema* schema) {
  Field f;
  FERRY_RETURN_NOT_OK(ImportInto(schema, &f, 0));
  return f;
}

Result<UniqueSchema> CopySchema(const ArrowSchema* schema) {
  FERRY_ASSIGN_OR_RAISE(Field f, Field::Import(schema));
  return f.Export();
}

Result<bool> SchemaEquals(const ArrowSchema* a, const ArrowSchema* b, bool check_metadata) {
  return SameNode(a, b, check_metadata, Role::kField, 0);
}

}  // namespace ferry
