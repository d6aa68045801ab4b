// Field export/import: owned schema trees through the C data interface.
#include "ferry/format/schema.hpp"

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

}  // namespace ferry
