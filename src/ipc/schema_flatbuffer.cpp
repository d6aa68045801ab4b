// Schemas from their flatbuffer form (schema_flatbuffer_write.cpp has the other way).
#include "ipc/schema_flatbuffer.hpp"

#include <bit>
#include <string>

#include "ferry/format/schema_view.hpp"

namespace ferry::ipc::internal {

namespace {

std::string Path(const std::string& parent, const flatbuffers::String* name, size_t index) {
  std::string here =
      name != nullptr ? std::string("\"").append(name->str()) + "\"" : "#" + std::to_string(index);
  return parent.empty() ? "field " + here : parent + " > " + here;
}

Result<std::string> IntFormat(const fb::Int* type, const std::string& where) {
  if (type == nullptr) return Status::Invalid(where + ": Int type has no table");
  const bool s = type->is_signed();
  switch (type->bit_width()) {
    case 8:
      return std::string(s ? "c" : "C");
    case 16:
      return std::string(s ? "s" : "S");
    case 32:
      return std::string(s ? "i" : "I");
    case 64:
      return std::string(s ? "l" : "L");
    default:
      return Status::Invalid(where + ": Int bit width " + std::to_string(type->bit_width()) +
                             " is not 8, 16, 32 or 64");
  }
}

char UnitLetter(fb::TimeUnit unit) {
  switch (unit) {
    case fb::TimeUnit::SECOND:
      return 's';
    case fb::TimeUnit::MILLISECOND:
      return 'm';
    case fb::TimeUnit::MICROSECOND:
      return 'u';
    case fb::TimeUnit::NANOSECOND:
      return 'n';
  }
  return '?';
}

// The format string of a non-dictionary field's type; `flags` may gain MAP_KEYS_SORTED.
Result<std::string> TypeFormat(const fb::Field* field, const std::string& where, int64_t* flags) {
  const auto n_children = field->children() ? field->children()->size() : 0;
  auto need = [&](flatbuffers::uoffset_t count, const char* what) -> Status {
    if (n_children != count) {
      return Status::Invalid(where + ": " + what + " needs " + std::to_string(count) + " child" +
                             (count == 1 ? "" : "ren") + ", has " + std::to_string(n_children));
    }
    return Status::OK();
  };
  auto unit_ok = [&](fb::TimeUnit unit) -> Status {
    if (UnitLetter(unit) == '?') {
      return Status::Invalid(where + ": time unit " + std::to_string(static_cast<int>(unit)) +
                             " is not one of SECOND, MILLISECOND, MICROSECOND, NANOSECOND");
    }
    return Status::OK();
  };
  switch (field->type_type()) {
    case fb::Type::NONE:
      return Status::Invalid(where + ": the type is NONE");
    case fb::Type::Null:
      return std::string("n");
    case fb::Type::Int:
      return IntFormat(field->type_as_Int(), where);
    case fb::Type::FloatingPoint: {
      const auto* t = field->type_as_FloatingPoint();
      switch (t ? t->precision() : fb::Precision::HALF) {
        case fb::Precision::HALF:
          return std::string("e");
        case fb::Precision::SINGLE:
          return std::string("f");
        case fb::Precision::DOUBLE:
          return std::string("g");
      }
      return Status::Invalid(where + ": unknown floating-point precision");
    }
    case fb::Type::Binary:
      return std::string("z");
    case fb::Type::Utf8:
      return std::string("u");
    case fb::Type::LargeBinary:
      return std::string("Z");
    case fb::Type::LargeUtf8:
      return std::string("U");
    case fb::Type::BinaryView:
      return std::string("vz");
    case fb::Type::Utf8View:
      return std::string("vu");
    case fb::Type::Bool:
      return std::string("b");
    case fb::Type::Decimal: {
      const auto* t = field->type_as_Decimal();
      if (t == nullptr) return Status::Invalid(where + ": Decimal type has no table");
      const int32_t bw = t->bit_width();
      if (bw != 32 && bw != 64 && bw != 128 && bw != 256) {
        return Status::Invalid(where + ": decimal bit width " + std::to_string(bw) +
                               " is not 32, 64, 128 or 256");
      }
      std::string out = "d:" + std::to_string(t->precision()) + "," + std::to_string(t->scale());
      if (bw != 128) out += "," + std::to_string(bw);
      return out;
    }
    case fb::Type::Date: {
      const auto* t = field->type_as_Date();
      const auto unit = t ? t->unit() : fb::DateUnit::MILLISECOND;
      if (unit == fb::DateUnit::DAY) return std::string("tdD");
      if (unit == fb::DateUnit::MILLISECOND) return std::string("tdm");
      return Status::Invalid(where + ": unknown date unit");
    }
    case fb::Type::Time: {
      const auto* t = field->type_as_Time();
      const auto unit = t ? t->unit() : fb::TimeUnit::MILLISECOND;
      const int32_t bw = t ? t->bit_width() : 32;
      FERRY_RETURN_NOT_OK(unit_ok(unit));
      const bool wide = unit == fb::TimeUnit::MICROSECOND || unit == fb::TimeUnit::NANOSECOND;
      if (bw != (wide ? 64 : 32)) {
        return Status::Invalid(where + ": time bit width " + std::to_string(bw) +
                               " does not match its unit (" + (wide ? "64" : "32") + " expected)");
      }
      return std::string("tt") + UnitLetter(unit);
    }
    case fb::Type::Timestamp: {
      const auto* t = field->type_as_Timestamp();
      const auto unit = t ? t->unit() : fb::TimeUnit::SECOND;
      FERRY_RETURN_NOT_OK(unit_ok(unit));
      std::string tz = (t && t->timezone()) ? t->timezone()->str() : "";
      return std::string("ts") + UnitLetter(unit) + ":" + tz;
    }
    case fb::Type::Duration: {
      const auto* t = field->type_as_Duration();
      const auto unit = t ? t->unit() : fb::TimeUnit::MILLISECOND;
      FERRY_RETURN_NOT_OK(unit_ok(unit));
      return std::string("tD") + UnitLetter(unit);
    }
    case fb::Type::Interval: {
      const auto* t = field->type_as_Interval();
      switch (t ? t->unit() : fb::IntervalUnit::YEAR_MONTH) {
        case fb::IntervalUnit::YEAR_MONTH:
          return std::string("tiM");
        case fb::IntervalUnit::DAY_TIME:
          return std::string("tiD");
        case fb::IntervalUnit::MONTH_DAY_NANO:
          return std::string("tin");
      }
      return Status::Invalid(where + ": unknown interval unit");
    }
    case fb::Type::FixedSizeBinary: {
      const auto* t = field->type_as_FixedSizeBinary();
      const int32_t width = t ? t->byte_width() : 0;
      if (width < 0) return Status::Invalid(where + ": fixed-size binary width is negative");
      return "w:" + std::to_string(width);
    }
    case fb::Type::List:
      FERRY_RETURN_NOT_OK(need(1, "a list"));
      return std::string("+l");
    case fb::Type::LargeList:
      FERRY_RETURN_NOT_OK(need(1, "a large list"));
      return std::string("+L");
    case fb::Type::ListView:
      FERRY_RETURN_NOT_OK(need(1, "a list view"));
      return std::string("+vl");
    case fb::Type::LargeListView:
      FERRY_RETURN_NOT_OK(need(1, "a large list view"));
      return std::string("+vL");
    case fb::Type::FixedSizeList: {
      FERRY_RETURN_NOT_OK(need(1, "a fixed-size list"));
      const auto* t = field->type_as_FixedSizeList();
      const int32_t size = t ? t->list_size() : 0;
      if (size < 0) return Status::Invalid(where + ": fixed-size list size is negative");
      return "+w:" + std::to_string(size);
    }
    case fb::Type::Struct_:
      return std::string("+s");
    case fb::Type::Map: {
      FERRY_RETURN_NOT_OK(need(1, "a map"));
      const auto* t = field->type_as_Map();
      if (t && t->keys_sorted()) *flags |= ARROW_FLAG_MAP_KEYS_SORTED;
      return std::string("+m");
    }
    case fb::Type::RunEndEncoded:
      FERRY_RETURN_NOT_OK(need(2, "a run-end encoded field"));
      return std::string("+r");
    case fb::Type::Union: {
      const auto* t = field->type_as_Union();
      if (t == nullptr) return Status::Invalid(where + ": Union type has no table");
      std::string out;
      if (t->mode() == fb::UnionMode::Sparse) {
        out = "+us:";
      } else if (t->mode() == fb::UnionMode::Dense) {
        out = "+ud:";
      } else {
        return Status::Invalid(where + ": unknown union mode");
      }
      const auto* ids = t->type_ids();
      if (ids != nullptr && ids->size() != n_children) {
        return Status::Invalid(where + ": the union has " + std::to_string(ids->size()) +
                               " type ids for " + std::to_string(n_children) + " children");
      }
      for (flatbuffers::uoffset_t i = 0; i < n_children; ++i) {
        const int32_t id = ids ? ids->Get(i) : static_cast<int32_t>(i);
        if (id < 0 || id > 127) {
          return Status::Invalid(where + ": union type id " + std::to_string(id) +
                                 " is outside 0..127");
        }
        out += (i ? "," : "") + std::to_string(id);
      }
      return out;
    }
  }
  return Status::Invalid(where + ": unknown type ordinal " +
                         std::to_string(static_cast<int>(field->type_type())));
}

struct Decoding {
  StreamSchema* out;
  std::vector<int64_t> ids;  // canonical order
};

Result<Field> FieldFrom(const fb::Field* f, const std::string& parent, size_t index, int depth,
                        Decoding* ctx) {
  if (f == nullptr) return Status::Invalid(parent + ": a field is NULL");
  const std::string where = Path(parent, f->name(), index);
  if (depth > kMaxDepth) {
    return Status::Invalid(where + ": nesting is deeper than " + std::to_string(kMaxDepth));
  }
  // The id is taken before the values' children: the canonical order.
  const fb::DictionaryEncoding* dict = f->dictionary();
  if (dict != nullptr) {
    ctx->ids.push_back(dict->id());
  }
  Field value;
  value.name = f->name() ? f->name()->str() : "";
  value.flags = f->nullable() ? ARROW_FLAG_NULLABLE : 0;
  value.metadata = MetadataFromFlatbuffer(f->custom_metadata());
  FERRY_ASSIGN_OR_RAISE(value.format, TypeFormat(f, where, &value.flags));
  if (f->children() != nullptr) {
    for (flatbuffers::uoffset_t i = 0; i < f->children()->size(); ++i) {
      FERRY_ASSIGN_OR_RAISE(Field child,
                            FieldFrom(f->children()->Get(i), where, i, depth + 1, ctx));
      value.children.push_back(std::move(child));
    }
  }
  if (dict == nullptr) return value;

  // Dictionary-encoded: the node becomes the index type; the values become the dictionary.
  if (dict->index_type() == nullptr) {
    return Status::Invalid(where + ": the dictionary encoding has no index type");
  }
  FERRY_ASSIGN_OR_RAISE(std::string index_format, IntFormat(dict->index_type(), where));
  Field encoded;
  encoded.format = index_format;
  encoded.name = value.name;
  encoded.flags = value.flags & ARROW_FLAG_NULLABLE;
  if (dict->is_ordered()) encoded.flags |= ARROW_FLAG_DICTIONARY_ORDERED;
  encoded.metadata = std::move(value.metadata);
  Field values = value;
  values.name = "";
  values.metadata.clear();
  encoded.dictionary = std::make_shared<const Field>(std::move(values));
  return encoded;
}

}  // namespace

Metadata MetadataFromFlatbuffer(
    const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* pairs) {
  Metadata out;
  if (pairs == nullptr) return out;
  for (flatbuffers::uoffset_t i = 0; i < pairs->size(); ++i) {
    const fb::KeyValue* kv = pairs->Get(i);
    if (kv == nullptr) continue;
    out.emplace_back(kv->key() ? kv->key()->str() : "", kv->value() ? kv->value()->str() : "");
  }
  return out;
}

namespace {

void Preorder(const ArrowSchema* node,
              const std::unordered_map<const ArrowSchema*, SchemaView>& views,
              StreamSchema::Preorder* out) {
  out->nodes.push_back(node);
  out->views.push_back(&views.at(node));
  for (int64_t i = 0; i < node->n_children; ++i) Preorder(node->children[i], views, out);
}

Status ParseViews(const ArrowSchema* node,
                  std::unordered_map<const ArrowSchema*, SchemaView>* views) {
  FERRY_ASSIGN_OR_RAISE(SchemaView v, SchemaView::Make(node));
  views->emplace(node, std::move(v));
  for (int64_t i = 0; i < node->n_children; ++i) {
    FERRY_RETURN_NOT_OK(ParseViews(node->children[i], views));
  }
  if (node->dictionary != nullptr) FERRY_RETURN_NOT_OK(ParseViews(node->dictionary, views));
  return Status::OK();
}

}  // namespace

bool SameTypes(const ArrowSchema* a, const ArrowSchema* b) {
  if (std::string_view(a->format) != std::string_view(b->format)) return false;
  if (a->n_children != b->n_children) return false;
  if ((a->dictionary == nullptr) != (b->dictionary == nullptr)) return false;
  if (a->dictionary != nullptr && !SameTypes(a->dictionary, b->dictionary)) return false;
  for (int64_t i = 0; i < a->n_children; ++i) {
    if (!SameTypes(a->children[i], b->children[i])) return false;
  }
  return true;
}

Result<StreamSchema> SchemaFromFlatbuffer(const fb::Schema* schema, fb::MetadataVersion version) {
  if (schema == nullptr) return Status::Invalid("the Schema message has no schema table");
  StreamSchema out;
  out.version = version;
  out.big_endian = schema->endianness() == fb::Endianness::Big;
  Decoding ctx{&out, {}};
  Field root = Field::Make("+s", "");
  root.flags = 0;
  root.metadata = MetadataFromFlatbuffer(schema->custom_metadata());
  if (schema->fields() != nullptr) {
    for (flatbuffers::uoffset_t i = 0; i < schema->fields()->size(); ++i) {
      FERRY_ASSIGN_OR_RAISE(Field f, FieldFrom(schema->fields()->Get(i), "", i, 1, &ctx));
      root.children.push_back(std::move(f));
    }
  }
  FERRY_ASSIGN_OR_RAISE(out.root, root.Export());
  size_t k = 0;
  std::string conflict;
  ForEachDictionaryNode(out.root.get(), [&](const ArrowSchema* node) {
    const int64_t id = ctx.ids[k++];
    out.id_of[node] = id;
    // Fields may share a dictionary (one id), provided its value type is the same everywhere.
    auto [it, inserted] = out.dictionary_schema.emplace(id, node->dictionary);
    if (!inserted && !SameTypes(it->second, node->dictionary) && conflict.empty()) {
      conflict = "dictionary id " + std::to_string(id) +
                 " is shared by fields whose dictionary value types differ";
    }
  });
  if (!conflict.empty()) return Status::Invalid(conflict);
  FERRY_RETURN_NOT_OK(ParseViews(out.root.get(), &out.views));
  for (int64_t i = 0; i < out.root->n_children; ++i) {
    Preorder(out.root->children[i], out.views, &out.preorder);
  }
  for (const auto& [id, value] : out.dictionary_schema) {
    Preorder(value, out.views, &out.dictionary_preorder[id]);
  }
  return out;
}

void ForEachDictionaryNode(const ArrowSchema* node,
                           const std::function<void(const ArrowSchema*)>& fn) {
  const ArrowSchema* type_node = node;
  if (node->dictionary != nullptr) {
    fn(node);
    type_node = node->dictionary;
  }
  for (int64_t i = 0; i < type_node->n_children; ++i)
    ForEachDictionaryNode(type_node->children[i], fn);
}

}  // namespace ferry::ipc::internal
