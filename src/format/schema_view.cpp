// SchemaView: one ArrowSchema node parsed (format, flags and extension metadata), and readable
// type descriptions of schema trees.
#include "ferry/format/schema_view.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "ferry/format/metadata.hpp"
#include "type_kinds.hpp"

namespace ferry {

namespace {

std::string NodeName(const ArrowSchema* schema) {
  if (schema->name == nullptr || schema->name[0] == '\0') return "schema node";
  return std::string("field \"") + schema->name + "\"";
}

}  // namespace

Result<SchemaView> SchemaView::Make(const ArrowSchema* schema) {
  if (schema == nullptr) return Status::Invalid("schema is NULL");
  if (schema->release == nullptr) return Status::Invalid("schema is released");
  const std::string where = NodeName(schema);
  if (schema->format == nullptr) return Status::Invalid(where + ": format is NULL");
  auto parsed = ParseFormat(schema->format);
  if (!parsed.ok()) return parsed.status().WithContext(where);
  FormatInfo& info = parsed.value();

  SchemaView view;
  view.schema = schema;
  view.type = info.type;
  view.storage_type = info.type;
  view.fixed_size = info.fixed_size;
  view.decimal_bitwidth = info.decimal_bitwidth;
  view.decimal_precision = info.decimal_precision;
  view.decimal_scale = info.decimal_scale;
  view.time_unit = info.time_unit;
  view.timezone = info.timezone;
  view.union_type_ids_text = info.union_type_ids_text;
  view.union_type_ids = std::move(info.union_type_ids);
  view.nullable = (schema->flags & ARROW_FLAG_NULLABLE) != 0;
  view.dictionary_ordered = (schema->flags & ARROW_FLAG_DICTIONARY_ORDERED) != 0;
  view.map_keys_sorted = (schema->flags & ARROW_FLAG_MAP_KEYS_SORTED) != 0;
  view.layout = LayoutOf(view.storage_type);
  if (view.storage_type == TypeId::kFixedSizeBinary) {
    // The layout counts bits in an int32 (as Arrow C++'s bit_width does).
    constexpr int32_t kMaxWidth = std::numeric_limits<int32_t>::max() / 8;
    if (view.fixed_size > kMaxWidth) {
      return Status::Invalid(where + ": fixed-size binary width " +
                             std::to_string(view.fixed_size) + " exceeds the largest supported, " +
                             std::to_string(kMaxWidth) + " bytes");
    }
    view.layout.element_size_bits[1] = view.fixed_size * 8;
  }

  if (schema->n_children < 0) {
    return Status::Invalid(where + ": n_children is negative (" +
                           std::to_string(schema->n_children) + ")");
  }
  if (schema->n_children > 0 && schema->children == nullptr) {
    return Status::Invalid(where + ": children is NULL but n_children is " +
                           std::to_string(schema->n_children));
  }
  for (int64_t i = 0; i < schema->n_children; ++i) {
    const ArrowSchema* child = schema->children[i];
    if (child == nullptr) {
      return Status::Invalid(where + ": child " + std::to_string(i) + " is NULL");
    }
    if (child->release == nullptr) {
      return Status::Invalid(where + ": child " + std::to_string(i) + " is released");
    }
  }

  const int32_t want = view.layout.n_children;
  if (want >= 0 && schema->n_children != want) {
    return Status::Invalid(where + ": type " + TypeIdName(view.storage_type) + " needs " +
                           std::to_string(want) + " child(ren), got " +
                           std::to_string(schema->n_children));
  }
  switch (view.storage_type) {
    case TypeId::kMap: {
      const ArrowSchema* entries = schema->children[0];
      if (entries->format == nullptr || std::strcmp(entries->format, "+s") != 0 ||
          entries->n_children != 2) {
        return Status::Invalid(where +
                               ": a map's child must be a struct of two fields (key, value)");
      }
      break;
    }
    case TypeId::kRunEndEncoded: {
      const ArrowSchema* run_ends = schema->children[0];
      auto re = ParseFormat(run_ends->format == nullptr ? "" : run_ends->format);
      if (!re.ok() || (re->type != TypeId::kInt16 && re->type != TypeId::kInt32 &&
                       re->type != TypeId::kInt64)) {
        return Status::Invalid(where + ": run ends must be int16, int32 or int64");
      }
      break;
    }
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      if (schema->n_children > 128) {
        return Status::Invalid(where + ": a union has at most 128 children");
      }
      if (view.union_type_ids_text.empty()) {
        // No ids listed: the type ids are the child indices.
        for (int64_t i = 0; i < schema->n_children; ++i) {
          view.union_type_ids.push_back(static_cast<int8_t>(i));
        }
      } else if (static_cast<int64_t>(view.union_type_ids.size()) != schema->n_children) {
        return Status::Invalid(where + ": union lists " +
                               std::to_string(view.union_type_ids.size()) + " type ids for " +
                               std::to_string(schema->n_children) + " children");
      }
      break;
    }
    default:
      break;
  }

  if (schema->dictionary != nullptr) {
    if (schema->dictionary->release == nullptr) {
      return Status::Invalid(where + ": dictionary is released");
    }
    if (!internal::IsIntegerType(view.storage_type)) {
      return Status::Invalid(where + ": dictionary indices must be an integer type, got " +
                             TypeIdName(view.storage_type));
    }
    view.type = TypeId::kDictionary;
  }

  if (schema->metadata != nullptr) {
    auto name = MetadataGet(schema->metadata, "ARROW:extension:name");
    if (!name.ok()) return name.status().WithContext(where);
    if (name->has_value()) {
      view.type = TypeId::kExtension;
      view.extension_name = **name;
      auto meta = MetadataGet(schema->metadata, "ARROW:extension:metadata");
      if (!meta.ok()) return meta.status().WithContext(where);
      if (meta->has_value()) view.extension_metadata = **meta;
    }
  }
  return view;
}

namespace {

const char* UnitName(TimeUnit u) {
  switch (u) {
    case TimeUnit::kSecond:
      return "s";
    case TimeUnit::kMilli:
      return "ms";
    case TimeUnit::kMicro:
      return "us";
    case TimeUnit::kNano:
      return "ns";
  }
  return "?";
}

Status AppendTypeString(const ArrowSchema* schema, int depth, std::string* out);

Status AppendChildren(const ArrowSchema* schema, int depth, std::string* out,
                      const std::vector<int8_t>* ids) {
  for (int64_t i = 0; i < schema->n_children; ++i) {
    if (i > 0) *out += ", ";
    if (ids != nullptr) *out += std::to_string((*ids)[static_cast<size_t>(i)]) + ": ";
    const ArrowSchema* child = schema->children[i];
    *out += child->name == nullptr ? "" : child->name;
    *out += ": ";
    FERRY_RETURN_NOT_OK(AppendTypeString(child, depth + 1, out));
  }
  return Status::OK();
}

Status AppendStorageString(const ArrowSchema* schema, const SchemaView& v, int depth,
                           std::string* out) {
  switch (v.storage_type) {
    case TypeId::kDecimal32:
    case TypeId::kDecimal64:
    case TypeId::kDecimal128:
    case TypeId::kDecimal256:
      *out += std::string(TypeIdName(v.storage_type)) + "(" + std::to_string(v.decimal_precision) +
              ", " + std::to_string(v.decimal_scale) + ")";
      return Status::OK();
    case TypeId::kFixedSizeBinary:
      *out += "fixed_size_binary[" + std::to_string(v.fixed_size) + "]";
      return Status::OK();
    case TypeId::kTime32:
    case TypeId::kTime64:
    case TypeId::kDuration:
      *out += std::string(TypeIdName(v.storage_type)) + "[" + UnitName(v.time_unit) + "]";
      return Status::OK();
    case TypeId::kTimestamp:
      *out += std::string("timestamp[") + UnitName(v.time_unit);
      if (!v.timezone.empty()) *out += ", tz=" + std::string(v.timezone);
      *out += "]";
      return Status::OK();
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kListView:
    case TypeId::kLargeListView:
      *out += std::string(TypeIdName(v.storage_type)) + "<";
      FERRY_RETURN_NOT_OK(AppendChildren(schema, depth, out, nullptr));
      *out += ">";
      return Status::OK();
    case TypeId::kFixedSizeList:
      *out += "fixed_size_list[" + std::to_string(v.fixed_size) + "]<";
      FERRY_RETURN_NOT_OK(AppendChildren(schema, depth, out, nullptr));
      *out += ">";
      return Status::OK();
    case TypeId::kStruct:
      *out += "struct<";
      FERRY_RETURN_NOT_OK(AppendChildren(schema, depth, out, nullptr));
      *out += ">";
      return Status::OK();
    case TypeId::kMap: {
      const ArrowSchema* entries = schema->children[0];
      *out += "map<";
      FERRY_RETURN_NOT_OK(AppendTypeString(entries->children[0], depth + 1, out));
      *out += ", ";
      FERRY_RETURN_NOT_OK(AppendTypeString(entries->children[1], depth + 1, out));
      if (v.map_keys_sorted) *out += ", keys_sorted";
      *out += ">";
      return Status::OK();
    }
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
      *out += std::string(TypeIdName(v.storage_type)) + "<";
      FERRY_RETURN_NOT_OK(AppendChildren(schema, depth, out, &v.union_type_ids));
      *out += ">";
      return Status::OK();
    case TypeId::kRunEndEncoded:
      *out += "run_end_encoded<run_ends: ";
      FERRY_RETURN_NOT_OK(AppendTypeString(schema->children[0], depth + 1, out));
      *out += ", values: ";
      FERRY_RETURN_NOT_OK(AppendTypeString(schema->children[1], depth + 1, out));
      *out += ">";
      return Status::OK();
    default:
      *out += TypeIdName(v.storage_type);
      return Status::OK();
  }
}

Status AppendTypeString(const ArrowSchema* schema, int depth, std::string* out) {
  if (depth > 64) return Status::Invalid("schema nests deeper than 64 levels");
  FERRY_ASSIGN_OR_RAISE(SchemaView v, SchemaView::Make(schema));
  if (v.type == TypeId::kExtension) {
    *out += "extension<" + std::string(v.extension_name) + ": ";
  }
  if (schema->dictionary != nullptr) {
    *out += "dictionary<values=";
    FERRY_RETURN_NOT_OK(AppendTypeString(schema->dictionary, depth + 1, out));
    *out += ", indices=";
    FERRY_RETURN_NOT_OK(AppendStorageString(schema, v, depth, out));
    if (v.dictionary_ordered) *out += ", ordered";
    *out += ">";
  } else {
    FERRY_RETURN_NOT_OK(AppendStorageString(schema, v, depth, out));
  }
  if (v.type == TypeId::kExtension) *out += ">";
  return Status::OK();
}

}  // namespace

Result<std::string> SchemaToString(const ArrowSchema* schema) {
  std::string out;
  FERRY_RETURN_NOT_OK(AppendTypeString(schema, 0, &out));
  return out;
}

Result<std::vector<int32_t>> ColumnIndices(const ArrowSchema* schema,
                                           const std::vector<std::string>& names) {
  if (schema == nullptr) return Status::Invalid("ColumnIndices: the schema is NULL");
  std::vector<int32_t> out;
  for (const std::string& name : names) {
    int32_t found = -1;
    std::string all;
    for (int64_t k = 0; k < schema->n_children; ++k) {
      const char* n = schema->children[k]->name != nullptr ? schema->children[k]->name : "";
      all += (k > 0 ? ", " : "") + std::string(n);
      if (found < 0 && name == n) found = static_cast<int32_t>(k);
    }
    if (found < 0 && !name.empty() && name.size() < 10 &&
        name.find_first_not_of("0123456789") == std::string::npos) {
      const int64_t index = std::stoll(name);
      if (index >= schema->n_children) {
        return Status::OutOfRange("column " + name + " is out of range (the schema has " +
                                  std::to_string(schema->n_children) + " columns)");
      }
      found = static_cast<int32_t>(index);
    }
    if (found < 0) {
      std::string why = "no column named \"";
      why.append(name).append("\" (the schema has: ").append(all).append(")");
      return Status::Invalid(why);
    }
    out.push_back(found);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace ferry
