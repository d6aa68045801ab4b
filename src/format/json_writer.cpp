// ArrayToJson: render a host-accessible ArrayView's values as JSON (docs/json.md).
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "ferry/core/hex.hpp"
#include "ferry/format/decimal.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/stream.hpp"
#include "nesting.hpp"

namespace ferry {

namespace {

void AppendEscaped(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void AppendHex(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) AppendHexByte(static_cast<uint8_t>(c), HexCase::kLower, out);
  out->push_back('"');
}

void AppendDouble(double d, std::string* out) {
  if (std::isnan(d)) {
    *out += "\"NaN\"";
  } else if (std::isinf(d)) {
    *out += d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
    (void)ec;
    std::string_view text(buf, static_cast<size_t>(end - buf));
    *out += text;
    // Keep floats recognisable as floats ("1.0", not "1").
    if (text.find_first_of(".eE") == std::string_view::npos) *out += ".0";
  }
}

// The T at byte `at` of a value's fixed-width bytes (the caller checked their width).
template <typename T>
T Load(std::string_view bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

Status AppendValue(const ArrayView& v, int64_t i, std::string* out, int depth);

Status AppendStorageValue(const ArrayView& v, int64_t i, std::string* out, int depth) {
  const SchemaView& t = v.type();
  switch (t.storage_type) {
    case TypeId::kNull:
      *out += "null";
      return Status::OK();
    case TypeId::kBool:
      *out += v.GetInt(i) ? "true" : "false";
      return Status::OK();
    case TypeId::kUInt64:
      *out += std::to_string(v.GetUInt(i));
      return Status::OK();
    case TypeId::kInt8:
    case TypeId::kUInt8:
    case TypeId::kInt16:
    case TypeId::kUInt16:
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kInt64:
    case TypeId::kDate32:
    case TypeId::kDate64:
    case TypeId::kTime32:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
    case TypeId::kIntervalMonths:
      *out += std::to_string(v.GetInt(i));
      return Status::OK();
    case TypeId::kHalfFloat:
    case TypeId::kFloat:
    case TypeId::kDouble:
      AppendDouble(v.GetDouble(i), out);
      return Status::OK();
    case TypeId::kDecimal32:
    case TypeId::kDecimal64:
    case TypeId::kDecimal128:
    case TypeId::kDecimal256: {
      std::string_view bytes = v.GetBytes(i);
      *out += '"';
      *out += DecimalToString(reinterpret_cast<const uint8_t*>(bytes.data()), t.decimal_bitwidth,
                              t.decimal_scale);
      *out += '"';
      return Status::OK();
    }
    case TypeId::kString:
    case TypeId::kLargeString:
    case TypeId::kStringView:
      AppendEscaped(v.GetBytes(i), out);
      return Status::OK();
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
    case TypeId::kBinaryView:
    case TypeId::kFixedSizeBinary:
      AppendHex(v.GetBytes(i), out);
      return Status::OK();
    case TypeId::kIntervalDayTime: {
      std::string_view b = v.GetBytes(i);
      // Appended piece by piece: `"[" + std::string&&` trips GCC 12's bogus -Wrestrict
      // (GCC PR 105651) in optimized builds.
      out->append("[").append(std::to_string(Load<int32_t>(b, 0)));
      out->append(", ").append(std::to_string(Load<int32_t>(b, 4))).append("]");
      return Status::OK();
    }
    case TypeId::kIntervalMonthDayNano: {
      std::string_view b = v.GetBytes(i);
      out->append("[").append(std::to_string(Load<int32_t>(b, 0)));  // GCC PR 105651
      out->append(", ").append(std::to_string(Load<int32_t>(b, 4)));
      out->append(", ").append(std::to_string(Load<int64_t>(b, 8))).append("]");
      return Status::OK();
    }
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kListView:
    case TypeId::kLargeListView:
    case TypeId::kFixedSizeList: {
      *out += '[';
      const int64_t start = v.ListStart(i);
      const int64_t end = v.ListEnd(i);
      for (int64_t k = start; k < end; ++k) {
        if (k > start) *out += ", ";
        FERRY_RETURN_NOT_OK(AppendValue(v.child(0), k, out, depth + 1));
      }
      *out += ']';
      return Status::OK();
    }
    case TypeId::kMap: {
      const ArrayView& entries = v.child(0);
      *out += '[';
      const int64_t start = v.ListStart(i);
      const int64_t end = v.ListEnd(i);
      for (int64_t k = start; k < end; ++k) {
        if (k > start) *out += ", ";
        *out += '[';
        FERRY_RETURN_NOT_OK(AppendValue(entries.child(0), entries.offset() + k, out, depth + 1));
        *out += ", ";
        FERRY_RETURN_NOT_OK(AppendValue(entries.child(1), entries.offset() + k, out, depth + 1));
        *out += ']';
      }
      *out += ']';
      return Status::OK();
    }
    case TypeId::kStruct: {
      *out += '{';
      for (int64_t c = 0; c < v.n_children(); ++c) {
        if (c > 0) *out += ", ";
        AppendEscaped(v.child(c).name(), out);
        *out += ": ";
        FERRY_RETURN_NOT_OK(AppendValue(v.child(c), v.offset() + i, out, depth + 1));
      }
      *out += '}';
      return Status::OK();
    }
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      const int8_t id = v.UnionTypeId(i);
      const int8_t child = v.union_child_index(id);
      if (child < 0)
        return Status::Invalid("union type id " + std::to_string(id) + " is not declared");
      out->append("[").append(std::to_string(id)).append(", ");  // GCC PR 105651
      FERRY_RETURN_NOT_OK(AppendValue(v.child(child), v.UnionChildOffset(i), out, depth + 1));
      *out += ']';
      return Status::OK();
    }
    case TypeId::kRunEndEncoded:
      return AppendValue(v.child(1), v.RunIndex(i), out, depth + 1);
    default:
      return Status::NotSupported(std::string("cannot render ") + TypeIdName(t.storage_type));
  }
}

Status AppendValue(const ArrayView& v, int64_t i, std::string* out, int depth) {
  if (depth > internal::kMaxDepth) return Status::Invalid("array nests deeper than 64 levels");
  if (v.IsNull(i)) {
    *out += "null";
    return Status::OK();
  }
  if (v.dictionary() != nullptr) {
    return AppendValue(*v.dictionary(), static_cast<int64_t>(v.GetUInt(i)), out, depth + 1);
  }
  return AppendStorageValue(v, i, out, depth);
}

}  // namespace

Result<std::string> ArrayToJson(const ArrayView& view) {
  if (view.array() == nullptr) return Status::Invalid("ArrayToJson: no array is set on the view");
  std::string out = "[";
  for (int64_t i = 0; i < view.length(); ++i) {
    if (i > 0) out += ", ";
    FERRY_RETURN_NOT_OK(AppendValue(view, i, &out, 0));
  }
  out += "]";
  return out;
}

Result<std::vector<std::string>> StreamToJson(ArrowArrayStream* stream) {
  FERRY_ASSIGN_OR_RAISE(ArrayStreamReader reader, ArrayStreamReader::Open(stream));
  std::vector<std::string> out;
  while (true) {
    FERRY_ASSIGN_OR_RAISE(std::optional<Array> batch, reader.Next());
    if (!batch) return out;
    Result<std::string> json = ArrayToJson(batch->view());
    if (!json.ok()) return json.status().WithContext("batch " + std::to_string(out.size()));
    out.push_back(std::move(*json));
  }
}

}  // namespace ferry
