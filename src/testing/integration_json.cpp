// The integration JSON writer: fields and columns, one ArrayView walk per batch.
#include "ferry/testing/integration_json.hpp"

#include <cstring>
#include <set>
#include <string>

#include "ferry/core/hex.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/decimal.hpp"
#include "ferry/format/metadata.hpp"
#include "ferry/format/schema_view.hpp"

namespace ferry::testing {

namespace {

using Json = nlohmann::json;

const char* UnitName(TimeUnit u) {
  switch (u) {
    case TimeUnit::kSecond:
      return "SECOND";
    case TimeUnit::kMilli:
      return "MILLISECOND";
    case TimeUnit::kMicro:
      return "MICROSECOND";
    default:
      return "NANOSECOND";
  }
}

Json IntType(TypeId id) {
  switch (id) {
    case TypeId::kInt8:
      return {{"name", "int"}, {"isSigned", true}, {"bitWidth", 8}};
    case TypeId::kUInt8:
      return {{"name", "int"}, {"isSigned", false}, {"bitWidth", 8}};
    case TypeId::kInt16:
      return {{"name", "int"}, {"isSigned", true}, {"bitWidth", 16}};
    case TypeId::kUInt16:
      return {{"name", "int"}, {"isSigned", false}, {"bitWidth", 16}};
    case TypeId::kInt32:
      return {{"name", "int"}, {"isSigned", true}, {"bitWidth", 32}};
    case TypeId::kUInt32:
      return {{"name", "int"}, {"isSigned", false}, {"bitWidth", 32}};
    case TypeId::kInt64:
      return {{"name", "int"}, {"isSigned", true}, {"bitWidth", 64}};
    default:
      return {{"name", "int"}, {"isSigned", false}, {"bitWidth", 64}};
  }
}

Result<Json> TypeJson(const SchemaView& v) {
  switch (v.storage_type) {
    case TypeId::kNull:
      return Json{{"name", "null"}};
    case TypeId::kBool:
      return Json{{"name", "bool"}};
    case TypeId::kInt8:
    case TypeId::kUInt8:
    case TypeId::kInt16:
    case TypeId::kUInt16:
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kInt64:
    case TypeId::kUInt64:
      return IntType(v.storage_type);
    case TypeId::kHalfFloat:
      return Json{{"name", "floatingpoint"}, {"precision", "HALF"}};
    case TypeId::kFloat:
      return Json{{"name", "floatingpoint"}, {"precision", "SINGLE"}};
    case TypeId::kDouble:
      return Json{{"name", "floatingpoint"}, {"precision", "DOUBLE"}};
    case TypeId::kDecimal32:
    case TypeId::kDecimal64:
    case TypeId::kDecimal128:
    case TypeId::kDecimal256:
      return Json{{"name", "decimal"},
                  {"precision", v.decimal_precision},
                  {"scale", v.decimal_scale},
                  {"bitWidth", v.decimal_bitwidth}};
    case TypeId::kFixedSizeBinary:
      return Json{{"name", "fixedsizebinary"}, {"byteWidth", v.fixed_size}};
    case TypeId::kBinary:
      return Json{{"name", "binary"}};
    case TypeId::kLargeBinary:
      return Json{{"name", "largebinary"}};
    case TypeId::kString:
      return Json{{"name", "utf8"}};
    case TypeId::kLargeString:
      return Json{{"name", "largeutf8"}};
    case TypeId::kBinaryView:
      return Json{{"name", "binaryview"}};
    case TypeId::kStringView:
      return Json{{"name", "utf8view"}};
    case TypeId::kDate32:
      return Json{{"name", "date"}, {"unit", "DAY"}};
    case TypeId::kDate64:
      return Json{{"name", "date"}, {"unit", "MILLISECOND"}};
    case TypeId::kTime32:
      return Json{{"name", "time"}, {"unit", UnitName(v.time_unit)}, {"bitWidth", 32}};
    case TypeId::kTime64:
      return Json{{"name", "time"}, {"unit", UnitName(v.time_unit)}, {"bitWidth", 64}};
    case TypeId::kTimestamp: {
      Json t{{"name", "timestamp"}, {"unit", UnitName(v.time_unit)}};
      if (!v.timezone.empty()) t["timezone"] = std::string(v.timezone);
      return t;
    }
    case TypeId::kDuration:
      return Json{{"name", "duration"}, {"unit", UnitName(v.time_unit)}};
    case TypeId::kIntervalMonths:
      return Json{{"name", "interval"}, {"unit", "YEAR_MONTH"}};
    case TypeId::kIntervalDayTime:
      return Json{{"name", "interval"}, {"unit", "DAY_TIME"}};
    case TypeId::kIntervalMonthDayNano:
      return Json{{"name", "interval"}, {"unit", "MONTH_DAY_NANO"}};
    case TypeId::kList:
      return Json{{"name", "list"}};
    case TypeId::kLargeList:
      return Json{{"name", "largelist"}};
    case TypeId::kListView:
      return Json{{"name", "listview"}};
    case TypeId::kLargeListView:
      return Json{{"name", "largelistview"}};
    case TypeId::kFixedSizeList:
      return Json{{"name", "fixedsizelist"}, {"listSize", v.fixed_size}};
    case TypeId::kStruct:
      return Json{{"name", "struct"}};
    case TypeId::kMap:
      return Json{{"name", "map"}, {"keysSorted", v.map_keys_sorted}};
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      Json ids = Json::array();
      for (int8_t id : v.union_type_ids) ids.push_back(id);
      return Json{{"name", "union"},
                  {"mode", v.storage_type == TypeId::kSparseUnion ? "SPARSE" : "DENSE"},
                  {"typeIds", ids}};
    }
    case TypeId::kRunEndEncoded:
      return Json{{"name", "runendencoded"}};
    default:
      return Status::NotSupported(std::string("no integration JSON for ") +
                                  TypeIdName(v.storage_type));
  }
}

class Writer {
 public:
  Result<Json> Field(const ArrowSchema* s) {
    FERRY_ASSIGN_OR_RAISE(SchemaView v, SchemaView::Make(s));
    const ArrowSchema* value = s->dictionary != nullptr ? s->dictionary : s;
    FERRY_ASSIGN_OR_RAISE(SchemaView vv, SchemaView::Make(value));
    Json f{{"name", s->name ? s->name : ""}, {"nullable", (s->flags & ARROW_FLAG_NULLABLE) != 0}};
    FERRY_ASSIGN_OR_RAISE(f["type"], TypeJson(vv));
    if (s->dictionary != nullptr) {
      f["dictionary"] = Json{{"id", next_id_++},
                             {"indexType", IntType(v.storage_type)},
                             {"isOrdered", v.dictionary_ordered}};
    }
    Json children = Json::array();
    for (int64_t i = 0; i < value->n_children; ++i) {
      FERRY_ASSIGN_OR_RAISE(Json c, Field(value->children[i]));
      children.push_back(std::move(c));
    }
    f["children"] = std::move(children);
    Result<MetadataView> md = DecodeMetadata(s->metadata);
    if (md.ok() && !md->empty()) {
      Json pairs = Json::array();
      for (const auto& [k, val] : *md) {
        pairs.push_back(Json{{"key", std::string(k)}, {"value", std::string(val)}});
      }
      f["metadata"] = std::move(pairs);
    }
    return f;
  }

  // Column `name` of view `v`, elements [start, start + count) (relative to the view's offset).
  Result<Json> Column(const ArrayView& v, const std::string& name, int64_t start, int64_t count,
                      Json* dictionaries) {
    Json c{{"name", name}, {"count", count}};
    const SchemaView& t = v.type();
    const TypeId st = t.storage_type;
    const bool has_validity =
        t.layout.n_fixed_buffers > 0 && t.layout.buffer_type[0] == BufferType::kValidity;
    if (has_validity && st != TypeId::kNull) {
      Json validity = Json::array();
      for (int64_t i = start; i < start + count; ++i) validity.push_back(v.IsValid(i) ? 1 : 0);
      c["VALIDITY"] = std::move(validity);
    }
    if (v.dictionary() != nullptr && dictionaries != nullptr) {
      const int64_t id = dictionary_index_++;
      if (!emitted_.contains(id)) {
        emitted_.insert(id);
        const ArrayView& d = *v.dictionary();
        FERRY_ASSIGN_OR_RAISE(Json dc,
                              Column(d, "DICT" + std::to_string(id), 0, d.length(), dictionaries));
        dictionaries->push_back(Json{
            {"id", id}, {"data", Json{{"count", d.length()}, {"columns", Json::array({dc})}}}});
      }
    }
    Json data = Json::array();
    auto int_text = [](int64_t x) { return Json(std::to_string(x)); };
    switch (st) {
      case TypeId::kNull:
        return c;
      case TypeId::kBool:
        for (int64_t i = start; i < start + count; ++i) data.push_back(v.GetInt(i) != 0);
        break;
      case TypeId::kInt8:
      case TypeId::kInt16:
      case TypeId::kInt32:
      case TypeId::kDate32:
      case TypeId::kTime32:
      case TypeId::kIntervalMonths:
        for (int64_t i = start; i < start + count; ++i) data.push_back(v.GetInt(i));
        break;
      case TypeId::kUInt8:
      case TypeId::kUInt16:
      case TypeId::kUInt32:
        for (int64_t i = start; i < start + count; ++i) data.push_back(v.GetUInt(i));
        break;
      case TypeId::kInt64:
      case TypeId::kDate64:
      case TypeId::kTime64:
      case TypeId::kTimestamp:
      case TypeId::kDuration:
        for (int64_t i = start; i < start + count; ++i) data.push_back(int_text(v.GetInt(i)));
        break;
      case TypeId::kUInt64:
        for (int64_t i = start; i < start + count; ++i)
          data.push_back(std::to_string(v.GetUInt(i)));
        break;
      case TypeId::kHalfFloat:
      case TypeId::kFloat:
      case TypeId::kDouble:
        for (int64_t i = start; i < start + count; ++i) data.push_back(v.GetDouble(i));
        break;
      case TypeId::kDecimal32:
      case TypeId::kDecimal64:
      case TypeId::kDecimal128:
      case TypeId::kDecimal256:
        for (int64_t i = start; i < start + count; ++i) {
          const std::string_view b = v.GetBytes(i);
          data.push_back(
              DecimalToString(reinterpret_cast<const uint8_t*>(b.data()), t.decimal_bitwidth, 0));
        }
        break;
      case TypeId::kIntervalDayTime:
        for (int64_t i = start; i < start + count; ++i) {
          int32_t p[2];
          std::memcpy(p, v.GetBytes(i).data(), 8);
          data.push_back(Json{{"days", p[0]}, {"milliseconds", p[1]}});
        }
        break;
      case TypeId::kIntervalMonthDayNano:
        for (int64_t i = start; i < start + count; ++i) {
          int32_t p[2];
          int64_t nanos;
          std::memcpy(p, v.GetBytes(i).data(), 8);
          std::memcpy(&nanos, v.GetBytes(i).data() + 8, 8);
          data.push_back(Json{{"months", p[0]}, {"days", p[1]}, {"nanoseconds", nanos}});
        }
        break;
      case TypeId::kFixedSizeBinary:
        for (int64_t i = start; i < start + count; ++i) data.push_back(Hex(v.GetBytes(i)));
        break;
      case TypeId::kBinary:
      case TypeId::kLargeBinary:
      case TypeId::kString:
      case TypeId::kLargeString: {
        const bool text = st == TypeId::kString || st == TypeId::kLargeString;
        Json offsets = Json::array({0});
        int64_t end = 0;
        for (int64_t i = start; i < start + count; ++i) {
          const std::string_view b = v.GetBytes(i);
          end += static_cast<int64_t>(b.size());
          offsets.push_back(st == TypeId::kLargeBinary || st == TypeId::kLargeString ? int_text(end)
                                                                                     : Json(end));
          data.push_back(text ? Json(std::string(b)) : Hex(b));
        }
        c["OFFSET"] = std::move(offsets);
        break;
      }
      case TypeId::kBinaryView:
      case TypeId::kStringView: {
        // Inline every value: the views are rebuilt as (size, inline) or referencing one buffer.
        const bool text = st == TypeId::kStringView;
        Json views = Json::array();
        std::string variadic;
        for (int64_t i = start; i < start + count; ++i) {
          const std::string_view b = v.IsValid(i) ? v.GetBytes(i) : std::string_view();
          const auto size = static_cast<int64_t>(b.size());
          if (size <= 12) {
            views.push_back(
                Json{{"SIZE", size}, {"INLINED", text ? Json(std::string(b)) : Hex(b)}});
          } else {
            views.push_back(Json{{"SIZE", size},
                                 {"PREFIX_HEX", Hex(b.substr(0, 4))},
                                 {"BUFFER_INDEX", 0},
                                 {"OFFSET", static_cast<int64_t>(variadic.size())}});
            variadic.append(b);
          }
        }
        c["VIEWS"] = std::move(views);
        c["VARIADIC_DATA_BUFFERS"] =
            variadic.empty() ? Json::array() : Json::array({Hex(variadic)});
        return c;
      }
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kMap: {
        const bool large = st == TypeId::kLargeList;
        const int64_t first = count > 0 ? v.ListStart(start) : 0;
        Json offsets = Json::array({0});
        int64_t last = first;
        for (int64_t i = start; i < start + count; ++i) {
          last = v.ListEnd(i);
          offsets.push_back(large ? int_text(last - first) : Json(last - first));
        }
        c["OFFSET"] = std::move(offsets);
        FERRY_ASSIGN_OR_RAISE(
            Json child, Column(v.child(0), ChildName(v, 0), first, last - first, dictionaries));
        c["children"] = Json::array({child});
        return c;
      }
      case TypeId::kListView:
      case TypeId::kLargeListView: {
        const bool large = st == TypeId::kLargeListView;
        Json offsets = Json::array();
        Json sizes = Json::array();
        for (int64_t i = start; i < start + count; ++i) {
          const int64_t s = v.ListStart(i);
          const int64_t e = v.ListEnd(i);
          offsets.push_back(large ? int_text(s) : Json(s));
          sizes.push_back(large ? int_text(e - s) : Json(e - s));
        }
        c["OFFSET"] = std::move(offsets);
        c["SIZE"] = std::move(sizes);
        const ArrayView& child = v.child(0);
        FERRY_ASSIGN_OR_RAISE(Json cj,
                              Column(child, ChildName(v, 0), 0, child.length(), dictionaries));
        c["children"] = Json::array({cj});
        return c;
      }
      case TypeId::kFixedSizeList: {
        const int64_t n = t.fixed_size;
        FERRY_ASSIGN_OR_RAISE(
            Json cj, Column(v.child(0), ChildName(v, 0), start * n, count * n, dictionaries));
        c["children"] = Json::array({cj});
        return c;
      }
      case TypeId::kStruct: {
        Json children = Json::array();
        for (int64_t k = 0; k < v.n_children(); ++k) {
          FERRY_ASSIGN_OR_RAISE(Json cj,
                                Column(v.child(k), ChildName(v, k), start, count, dictionaries));
          children.push_back(std::move(cj));
        }
        c["children"] = std::move(children);
        return c;
      }
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion: {
        const bool dense = st == TypeId::kDenseUnion;
        Json ids = Json::array();
        Json offsets = Json::array();
        for (int64_t i = start; i < start + count; ++i) {
          ids.push_back(v.UnionTypeId(i));
          if (dense) offsets.push_back(v.UnionChildOffset(i));
        }
        c["TYPE_ID"] = std::move(ids);
        if (dense) c["OFFSET"] = std::move(offsets);
        Json children = Json::array();
        for (int64_t k = 0; k < v.n_children(); ++k) {
          const ArrayView& child = v.child(k);
          FERRY_ASSIGN_OR_RAISE(Json cj, Column(child, ChildName(v, k), dense ? 0 : start,
                                                dense ? child.length() : count, dictionaries));
          children.push_back(std::move(cj));
        }
        c["children"] = std::move(children);
        return c;
      }
      case TypeId::kRunEndEncoded: {
        if (v.offset() != 0 || start != 0) {
          return Status::NotSupported("integration JSON of a sliced run-end encoded array");
        }
        Json children = Json::array();
        for (int64_t k = 0; k < 2; ++k) {
          const ArrayView& child = v.child(k);
          FERRY_ASSIGN_OR_RAISE(Json cj,
                                Column(child, ChildName(v, k), 0, child.length(), dictionaries));
          children.push_back(std::move(cj));
        }
        c["children"] = std::move(children);
        return c;
      }
      default:
        return Status::NotSupported(std::string("no integration JSON for ") + TypeIdName(st));
    }
    c["DATA"] = std::move(data);
    return c;
  }

  void ResetBatch() { dictionary_index_ = 0; }

 private:
  static std::string ChildName(const ArrayView& v, int64_t k) {
    return std::string(v.child(k).name());
  }
  static Json Hex(std::string_view b) { return HexEncode(b, HexCase::kUpper); }

  int64_t next_id_ = 0;
  int64_t dictionary_index_ = 0;
  std::set<int64_t> emitted_;
};

}  // namespace

Result<nlohmann::json> IntegrationJson(const ArrowSchema* root,
                                       const std::vector<const ArrowArray*>& batches) {
  Writer w;
  Json fields = Json::array();
  for (int64_t i = 0; i < root->n_children; ++i) {
    FERRY_ASSIGN_OR_RAISE(Json f, w.Field(root->children[i]));
    fields.push_back(std::move(f));
  }
  Json schema{{"fields", fields}};
  Result<MetadataView> md = DecodeMetadata(root->metadata);
  if (md.ok() && !md->empty()) {
    Json pairs = Json::array();
    for (const auto& [k, v] : *md) {
      pairs.push_back(Json{{"key", std::string(k)}, {"value", std::string(v)}});
    }
    schema["metadata"] = std::move(pairs);
  }
  Json dictionaries = Json::array();
  Json out_batches = Json::array();
  FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(root));
  for (const ArrowArray* batch : batches) {
    FERRY_RETURN_NOT_OK(view.SetArray(batch));
    w.ResetBatch();
    Json columns = Json::array();
    for (int64_t i = 0; i < view.n_children(); ++i) {
      FERRY_ASSIGN_OR_RAISE(Json c, w.Column(view.child(i), std::string(view.child(i).name()), 0,
                                             view.length(), &dictionaries));
      columns.push_back(std::move(c));
    }
    out_batches.push_back(Json{{"count", view.length()}, {"columns", std::move(columns)}});
  }
  Json doc{{"schema", schema}, {"batches", out_batches}};
  if (!dictionaries.empty()) doc["dictionaries"] = std::move(dictionaries);
  return doc;
}

}  // namespace ferry::testing
