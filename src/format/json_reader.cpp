// ArrayFromJson: JSON values (docs/json.md) to arrays through ArrayBuilder.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "ferry/core/hex.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/json.hpp"

namespace ferry {

namespace {

using Json = nlohmann::json;

class JsonAppender {
 public:
  Status Append(ArrayBuilder* b, const Json& v, const std::string& path) {
    Status st = AppendImpl(b, v, path);
    if (!st.ok() && st.message().rfind("element", 0) != 0) {
      return st.WithContext(path);
    }
    return st;
  }

 private:
  static Status Expected(const char* what, const Json& v) {
    return Status::Invalid(std::string("expected ") + what + ", got " + v.type_name());
  }

  // An integer field of a composite value (an interval's parts): a JSON integer that fits `T`.
  // nlohmann's get<T>() would convert a float or an out-of-range integer with undefined results.
  template <typename T>
  static Result<T> IntegerOf(const Json& v) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const auto n = v.get<int64_t>();
      if (n >= std::numeric_limits<T>::min() && n <= std::numeric_limits<T>::max()) {
        return static_cast<T>(n);
      }
    } else {
      return Expected("an integer", v);
    }
    return Status::Invalid("integer " + v.dump() + " is out of range for " +
                           std::to_string(sizeof(T) * 8) + " bits");
  }

  static Result<std::string> Hex(const Json& v) {
    if (!v.is_string()) return Expected("a hex string", v);
    return HexDecode(v.get_ref<const std::string&>());
  }

  static Result<double> Double(const Json& v) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
      if (s == "Infinity") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    }
    return Expected("a number", v);
  }

  static Status AppendInteger(ArrayBuilder* b, const Json& v) {
    if (v.is_number_unsigned()) return b->AppendUInt(v.get<uint64_t>());
    if (v.is_number_integer()) return b->AppendInt(v.get<int64_t>());
    if (v.is_boolean()) return b->AppendInt(v.get<bool>() ? 1 : 0);
    return Expected("an integer", v);
  }

  // Append a scalar value of `value_type` through `b` (which may be a dictionary builder).
  Status AppendScalar(ArrayBuilder* b, TypeId value_type, const SchemaView& vt, const Json& v) {
    switch (value_type) {
      case TypeId::kBool:
        if (!v.is_boolean()) return Expected("true or false", v);
        return b->AppendInt(v.get<bool>() ? 1 : 0);
      case TypeId::kHalfFloat:
      case TypeId::kFloat:
      case TypeId::kDouble: {
        FERRY_ASSIGN_OR_RAISE(double d, Double(v));
        return b->AppendDouble(d);
      }
      case TypeId::kDecimal32:
      case TypeId::kDecimal64:
      case TypeId::kDecimal128:
      case TypeId::kDecimal256:
        if (v.is_string()) return b->AppendDecimal(v.get_ref<const std::string&>());
        if (v.is_number_integer()) return b->AppendDecimal(v.dump());
        return Expected("a decimal string", v);
      case TypeId::kString:
      case TypeId::kLargeString:
      case TypeId::kStringView:
        if (!v.is_string()) return Expected("a string", v);
        return b->AppendBytes(v.get_ref<const std::string&>());
      case TypeId::kBinary:
      case TypeId::kLargeBinary:
      case TypeId::kBinaryView:
      case TypeId::kFixedSizeBinary: {
        FERRY_ASSIGN_OR_RAISE(std::string bytes, Hex(v));
        return b->AppendBytes(bytes);
      }
      case TypeId::kIntervalDayTime: {
        if (!v.is_array() || v.size() != 2) return Expected("[days, milliseconds]", v);
        int32_t parts[2];
        FERRY_ASSIGN_OR_RAISE(parts[0], IntegerOf<int32_t>(v[0]));
        FERRY_ASSIGN_OR_RAISE(parts[1], IntegerOf<int32_t>(v[1]));
        return b->AppendBytes(std::string_view(reinterpret_cast<const char*>(parts), 8));
      }
      case TypeId::kIntervalMonthDayNano: {
        if (!v.is_array() || v.size() != 3) return Expected("[months, days, nanoseconds]", v);
        char bytes[16];
        FERRY_ASSIGN_OR_RAISE(const int32_t months, IntegerOf<int32_t>(v[0]));
        FERRY_ASSIGN_OR_RAISE(const int32_t days, IntegerOf<int32_t>(v[1]));
        FERRY_ASSIGN_OR_RAISE(const int64_t nanos, IntegerOf<int64_t>(v[2]));
        std::memcpy(bytes, &months, 4);
        std::memcpy(bytes + 4, &days, 4);
        std::memcpy(bytes + 8, &nanos, 8);
        return b->AppendBytes(std::string_view(bytes, 16));
      }
      default:
        (void)vt;
        return AppendInteger(b, v);
    }
  }

  Status AppendImpl(ArrayBuilder* b, const Json& v, const std::string& path) {
    const SchemaView& t = b->type();
    const TypeId storage = t.storage_type;
    if (storage == TypeId::kRunEndEncoded) return AppendRunEncoded(b, v, path);
    if (v.is_null()) return b->AppendNull();
    if (b->dictionary() != nullptr) {
      const SchemaView& dt = b->dictionary()->type();
      return AppendScalar(b, dt.storage_type, dt, v);
    }
    switch (storage) {
      case TypeId::kNull:
        return Expected("null", v);
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kListView:
      case TypeId::kLargeListView:
      case TypeId::kFixedSizeList: {
        if (!v.is_array()) return Expected("an array", v);
        if (storage == TypeId::kFixedSizeList && static_cast<int64_t>(v.size()) != t.fixed_size) {
          return Status::Invalid("expected " + std::to_string(t.fixed_size) + " values, got " +
                                 std::to_string(v.size()));
        }
        for (size_t i = 0; i < v.size(); ++i) {
          FERRY_RETURN_NOT_OK(Append(b->child(0), v[i], path + " > item " + std::to_string(i)));
        }
        return b->FinishElement();
      }
      case TypeId::kMap: {
        if (!v.is_array()) return Expected("an array of [key, value] pairs", v);
        ArrayBuilder* entries = b->child(0);
        for (size_t i = 0; i < v.size(); ++i) {
          const Json& pair = v[i];
          const std::string where = path + " > entry " + std::to_string(i);
          if (!pair.is_array() || pair.size() != 2) {
            return Status::Invalid(where + ": expected a [key, value] pair");
          }
          FERRY_RETURN_NOT_OK(Append(entries->child(0), pair[0], where + " > key"));
          FERRY_RETURN_NOT_OK(Append(entries->child(1), pair[1], where + " > value"));
          FERRY_RETURN_NOT_OK(entries->FinishElement());
        }
        return b->FinishElement();
      }
      case TypeId::kStruct: {
        if (!v.is_object()) return Expected("an object", v);
        size_t used = 0;
        for (int64_t i = 0; i < b->n_children(); ++i) {
          ArrayBuilder* child = b->child(i);
          const char* name = child->type().schema->name;
          const std::string key = name == nullptr ? "" : name;
          auto it = v.find(key);
          if (it == v.end()) {
            FERRY_RETURN_NOT_OK(child->AppendNull());
          } else {
            ++used;
            std::string where = path;
            where.append(" > field \"").append(key).append("\"");
            FERRY_RETURN_NOT_OK(Append(child, *it, where));
          }
        }
        if (used != v.size()) return Status::Invalid("object has fields the struct does not");
        return b->FinishElement();
      }
      case TypeId::kSparseUnion:
      case TypeId::kDenseUnion: {
        if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer()) {
          return Expected("a [type_id, value] pair", v);
        }
        const auto id = v[0].get<int64_t>();
        if (id < 0 || id > 127) return Status::Invalid("union type id out of range");
        const auto type_id = static_cast<int8_t>(id);
        FERRY_RETURN_NOT_OK(b->AppendUnion(type_id));
        for (size_t i = 0; i < t.union_type_ids.size(); ++i) {
          if (t.union_type_ids[i] == type_id) {
            return Append(b->child(static_cast<int64_t>(i)), v[1],
                          path + " > type " + std::to_string(id));
          }
        }
        return Status::Invalid("union type id not declared");
      }
      default:
        return AppendScalar(b, storage, t, v);
    }
  }

  // Consecutive equal values share one run.
  Status AppendRunEncoded(ArrayBuilder* b, const Json& v, const std::string& path) {
    auto it = last_run_value_.find(b);
    if (it != last_run_value_.end() && it->second.second == b->length() && it->second.first == v) {
      FERRY_RETURN_NOT_OK(b->ExtendLastRun(1));
      it->second.second = b->length();
      return Status::OK();
    }
    FERRY_RETURN_NOT_OK(Append(b->child(1), v, path + " > value"));
    FERRY_RETURN_NOT_OK(b->AppendRun(1));
    last_run_value_[b] = {v, b->length()};
    return Status::OK();
  }

  std::map<ArrayBuilder*, std::pair<Json, int64_t>> last_run_value_;
};

}  // namespace

Result<UniqueArray> ArrayFromJson(const ArrowSchema* schema, std::string_view json) {
  Json parsed = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::Invalid("ArrayFromJson: the text is not valid JSON");
  if (!parsed.is_array()) return Status::Invalid("ArrayFromJson: expected a JSON array of values");
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<ArrayBuilder> builder, ArrayBuilder::Make(schema));
  JsonAppender appender;
  size_t i = 0;
  try {
    for (; i < parsed.size(); ++i) {
      FERRY_RETURN_NOT_OK(
          appender.Append(builder.get(), parsed[i], "element " + std::to_string(i)));
    }
  } catch (const nlohmann::json::exception& e) {
    // Conversions such as get<int32_t>() on a value of another kind throw; report, don't crash.
    return Status::Invalid("element " + std::to_string(i) + ": " + e.what());
  }
  return builder->Finish();
}

}  // namespace ferry
