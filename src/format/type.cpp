// Format strings of the Arrow C data interface: parsing, printing and the layouts they imply.
#include "ferry/format/type.hpp"

#include <charconv>
#include <cstring>
#include <limits>

#include "ferry/format/metadata.hpp"

namespace ferry {

const char* TypeIdName(TypeId id) noexcept {
  switch (id) {
    case TypeId::kUninitialized:
      return "uninitialized";
    case TypeId::kNull:
      return "null";
    case TypeId::kBool:
      return "bool";
    case TypeId::kInt8:
      return "int8";
    case TypeId::kUInt8:
      return "uint8";
    case TypeId::kInt16:
      return "int16";
    case TypeId::kUInt16:
      return "uint16";
    case TypeId::kInt32:
      return "int32";
    case TypeId::kUInt32:
      return "uint32";
    case TypeId::kInt64:
      return "int64";
    case TypeId::kUInt64:
      return "uint64";
    case TypeId::kHalfFloat:
      return "halffloat";
    case TypeId::kFloat:
      return "float";
    case TypeId::kDouble:
      return "double";
    case TypeId::kDecimal32:
      return "decimal32";
    case TypeId::kDecimal64:
      return "decimal64";
    case TypeId::kDecimal128:
      return "decimal128";
    case TypeId::kDecimal256:
      return "decimal256";
    case TypeId::kFixedSizeBinary:
      return "fixed_size_binary";
    case TypeId::kBinary:
      return "binary";
    case TypeId::kLargeBinary:
      return "large_binary";
    case TypeId::kString:
      return "string";
    case TypeId::kLargeString:
      return "large_string";
    case TypeId::kBinaryView:
      return "binary_view";
    case TypeId::kStringView:
      return "string_view";
    case TypeId::kDate32:
      return "date32";
    case TypeId::kDate64:
      return "date64";
    case TypeId::kTime32:
      return "time32";
    case TypeId::kTime64:
      return "time64";
    case TypeId::kTimestamp:
      return "timestamp";
    case TypeId::kDuration:
      return "duration";
    case TypeId::kIntervalMonths:
      return "interval_months";
    case TypeId::kIntervalDayTime:
      return "interval_day_time";
    case TypeId::kIntervalMonthDayNano:
      return "interval_month_day_nano";
    case TypeId::kList:
      return "list";
    case TypeId::kLargeList:
      return "large_list";
    case TypeId::kListView:
      return "list_view";
    case TypeId::kLargeListView:
      return "large_list_view";
    case TypeId::kFixedSizeList:
      return "fixed_size_list";
    case TypeId::kStruct:
      return "struct";
    case TypeId::kMap:
      return "map";
    case TypeId::kSparseUnion:
      return "sparse_union";
    case TypeId::kDenseUnion:
      return "dense_union";
    case TypeId::kRunEndEncoded:
      return "run_end_encoded";
    case TypeId::kDictionary:
      return "dictionary";
    case TypeId::kExtension:
      return "extension";
  }
  return "unknown";
}

namespace {

// A cursor over a format string that produces errors naming the character and its position.
class FormatCursor {
 public:
  explicit FormatCursor(std::string_view format) : format_(format) {}

  bool at_end() const { return pos_ >= format_.size(); }
  size_t pos() const { return pos_; }
  char peek() const { return at_end() ? '\0' : format_[pos_]; }
  char next() { return at_end() ? '\0' : format_[pos_++]; }
  std::string_view rest() const { return format_.substr(pos_); }
  void skip_to_end() { pos_ = format_.size(); }

  Status Error(size_t at, const std::string& why) const {
    std::string msg = "format \"" + std::string(format_) + "\": ";
    if (at < format_.size()) {
      msg += "unexpected '" + std::string(1, format_[at]) + "' at position " + std::to_string(at);
    } else {
      msg += "unexpected end at position " + std::to_string(at);
    }
    return Status::Invalid(msg + ": " + why);
  }

  Status Expect(char c, const std::string& why) {
    if (peek() != c) return Error(pos_, why);
    ++pos_;
    return Status::OK();
  }

  // Parse a decimal integer in [lo, hi]; digits only, an optional leading '-'.
  Status ParseInt(int64_t lo, int64_t hi, const std::string& what, int64_t* out) {
    size_t start = pos_;
    const char* first = format_.data() + pos_;
    const char* last = format_.data() + format_.size();
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range) {
      return Error(start, what + " does not fit in 64 bits");
    }
    if (ec != std::errc() || ptr == first) return Error(start, "expected " + what);
    if (value < lo || value > hi) {
      return Error(start, what + " " + std::to_string(value) + " is outside [" +
                              std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    pos_ = static_cast<size_t>(ptr - format_.data());
    *out = value;
    return Status::OK();
  }

 private:
  std::string_view format_;
  size_t pos_ = 0;
};

Status ParseTimeUnit(FormatCursor& cur, TimeUnit* unit) {
  size_t at = cur.pos();
  switch (cur.next()) {
    case 's':
      *unit = TimeUnit::kSecond;
      return Status::OK();
    case 'm':
      *unit = TimeUnit::kMilli;
      return Status::OK();
    case 'u':
      *unit = TimeUnit::kMicro;
      return Status::OK();
    case 'n':
      *unit = TimeUnit::kNano;
      return Status::OK();
    default:
      return cur.Error(at, "expected a time unit (s, m, u, n)");
  }
}

Status ParseUnionIds(FormatCursor& cur, FormatInfo* info) {
  size_t start = cur.pos();
  info->union_type_ids_text = cur.rest();
  if (cur.at_end()) return Status::OK();
  while (true) {
    int64_t id = 0;
    FERRY_RETURN_NOT_OK(cur.ParseInt(0, 127, "union type id", &id));
    for (int8_t seen : info->union_type_ids) {
      if (seen == id) return cur.Error(start, "union type id " + std::to_string(id) + " repeats");
    }
    info->union_type_ids.push_back(static_cast<int8_t>(id));
    if (cur.at_end()) return Status::OK();
    FERRY_RETURN_NOT_OK(cur.Expect(',', "expected ',' between union type ids"));
  }
}

Status ParseFormatImpl(FormatCursor& cur, FormatInfo* info) {
  if (cur.at_end()) return cur.Error(0, "the format string is empty");
  size_t at = cur.pos();
  char c = cur.next();
  switch (c) {
    case 'n':
      info->type = TypeId::kNull;
      return Status::OK();
    case 'b':
      info->type = TypeId::kBool;
      return Status::OK();
    case 'c':
      info->type = TypeId::kInt8;
      return Status::OK();
    case 'C':
      info->type = TypeId::kUInt8;
      return Status::OK();
    case 's':
      info->type = TypeId::kInt16;
      return Status::OK();
    case 'S':
      info->type = TypeId::kUInt16;
      return Status::OK();
    case 'i':
      info->type = TypeId::kInt32;
      return Status::OK();
    case 'I':
      info->type = TypeId::kUInt32;
      return Status::OK();
    case 'l':
      info->type = TypeId::kInt64;
      return Status::OK();
    case 'L':
      info->type = TypeId::kUInt64;
      return Status::OK();
    case 'e':
      info->type = TypeId::kHalfFloat;
      return Status::OK();
    case 'f':
      info->type = TypeId::kFloat;
      return Status::OK();
    case 'g':
      info->type = TypeId::kDouble;
      return Status::OK();
    case 'z':
      info->type = TypeId::kBinary;
      return Status::OK();
    case 'Z':
      info->type = TypeId::kLargeBinary;
      return Status::OK();
    case 'u':
      info->type = TypeId::kString;
      return Status::OK();
    case 'U':
      info->type = TypeId::kLargeString;
      return Status::OK();
    case 'v': {
      size_t vat = cur.pos();
      char v = cur.next();
      if (v == 'z')
        info->type = TypeId::kBinaryView;
      else if (v == 'u')
        info->type = TypeId::kStringView;
      else
        return cur.Error(vat, "expected 'z' or 'u' after 'v' (binary or string view)");
      return Status::OK();
    }
    case 'd': {
      FERRY_RETURN_NOT_OK(cur.Expect(':', "expected ':' after 'd' (decimal)"));
      int64_t precision = 0;
      int64_t scale = 0;
      int64_t width = 128;
      FERRY_RETURN_NOT_OK(cur.ParseInt(1, 76, "decimal precision", &precision));
      FERRY_RETURN_NOT_OK(cur.Expect(',', "expected ',' and a scale after the decimal precision"));
      size_t scale_at = cur.pos();
      FERRY_RETURN_NOT_OK(cur.ParseInt(-32768, 32767, "decimal scale", &scale));
      (void)scale_at;
      if (!cur.at_end()) {
        FERRY_RETURN_NOT_OK(cur.Expect(',', "expected ',' and a bit width after the scale"));
        size_t width_at = cur.pos();
        FERRY_RETURN_NOT_OK(cur.ParseInt(0, 256, "decimal bit width", &width));
        if (width != 32 && width != 64 && width != 128 && width != 256) {
          return cur.Error(width_at, "decimal bit width must be 32, 64, 128 or 256");
        }
      }
      int64_t max_precision = width == 32 ? 9 : width == 64 ? 18 : width == 128 ? 38 : 76;
      if (precision > max_precision) {
        return cur.Error(2, "precision " + std::to_string(precision) + " exceeds " +
                                std::to_string(max_precision) + " for decimal" +
                                std::to_string(width));
      }
      info->type = width == 32    ? TypeId::kDecimal32
                   : width == 64  ? TypeId::kDecimal64
                   : width == 128 ? TypeId::kDecimal128
                                  : TypeId::kDecimal256;
      info->decimal_bitwidth = static_cast<int32_t>(width);
      info->decimal_precision = static_cast<int32_t>(precision);
      info->decimal_scale = static_cast<int32_t>(scale);
      return Status::OK();
    }
    case 'w': {
      FERRY_RETURN_NOT_OK(cur.Expect(':', "expected ':' after 'w' (fixed-size binary)"));
      int64_t width = 0;
      FERRY_RETURN_NOT_OK(
          cur.ParseInt(1, std::numeric_limits<int32_t>::max(), "byte width", &width));
      info->type = TypeId::kFixedSizeBinary;
      info->fixed_size = static_cast<int32_t>(width);
      return Status::OK();
    }
    case 't': {
      size_t kat = cur.pos();
      char kind = cur.next();
      switch (kind) {
        case 'd': {
          size_t uat = cur.pos();
          char u = cur.next();
          if (u == 'D')
            info->type = TypeId::kDate32;
          else if (u == 'm')
            info->type = TypeId::kDate64;
          else
            return cur.Error(uat, "expected 'D' (days) or 'm' (milliseconds) after \"td\"");
          return Status::OK();
        }
        case 't': {
          size_t uat = cur.pos();
          FERRY_RETURN_NOT_OK(ParseTimeUnit(cur, &info->time_unit));
          (void)uat;
          info->type = (info->time_unit == TimeUnit::kSecond || info->time_unit == TimeUnit::kMilli)
                           ? TypeId::kTime32
                           : TypeId::kTime64;
          return Status::OK();
        }
        case 's': {
          FERRY_RETURN_NOT_OK(ParseTimeUnit(cur, &info->time_unit));
          FERRY_RETURN_NOT_OK(cur.Expect(':', "expected ':' and an optional time zone"));
          info->type = TypeId::kTimestamp;
          info->timezone = cur.rest();
          cur.skip_to_end();
          return Status::OK();
        }
        case 'D': {
          FERRY_RETURN_NOT_OK(ParseTimeUnit(cur, &info->time_unit));
          info->type = TypeId::kDuration;
          return Status::OK();
        }
        case 'i': {
          size_t uat = cur.pos();
          char u = cur.next();
          if (u == 'M')
            info->type = TypeId::kIntervalMonths;
          else if (u == 'D')
            info->type = TypeId::kIntervalDayTime;
          else if (u == 'n')
            info->type = TypeId::kIntervalMonthDayNano;
          else
            return cur.Error(uat, "expected an interval unit (M, D, n)");
          return Status::OK();
        }
        default:
          return cur.Error(kat, "expected a temporal kind (d, t, s, D, i) after 't'");
      }
    }
    case '+': {
      size_t kat = cur.pos();
      char kind = cur.next();
      switch (kind) {
        case 'l':
          info->type = TypeId::kList;
          return Status::OK();
        case 'L':
          info->type = TypeId::kLargeList;
          return Status::OK();
        case 's':
          info->type = TypeId::kStruct;
          return Status::OK();
        case 'm':
          info->type = TypeId::kMap;
          return Status::OK();
        case 'r':
          info->type = TypeId::kRunEndEncoded;
          return Status::OK();
        case 'v': {
          size_t vat = cur.pos();
          char v = cur.next();
          if (v == 'l')
            info->type = TypeId::kListView;
          else if (v == 'L')
            info->type = TypeId::kLargeListView;
          else
            return cur.Error(vat, "expected 'l' or 'L' after \"+v\" (list view)");
          return Status::OK();
        }
        case 'w': {
          FERRY_RETURN_NOT_OK(cur.Expect(':', "expected ':' after \"+w\" (fixed-size list)"));
          int64_t size = 0;
          FERRY_RETURN_NOT_OK(
              cur.ParseInt(0, std::numeric_limits<int32_t>::max(), "list size", &size));
          info->type = TypeId::kFixedSizeList;
          info->fixed_size = static_cast<int32_t>(size);
          return Status::OK();
        }
        case 'u': {
          size_t mat = cur.pos();
          char mode = cur.next();
          if (mode == 'd')
            info->type = TypeId::kDenseUnion;
          else if (mode == 's')
            info->type = TypeId::kSparseUnion;
          else
            return cur.Error(mat, "expected 'd' (dense) or 's' (sparse) after \"+u\"");
          FERRY_RETURN_NOT_OK(cur.Expect(':', "expected ':' and the union type ids"));
          return ParseUnionIds(cur, info);
        }
        default:
          return cur.Error(kat,
                           "expected a nested kind (l, L, vl, vL, w, s, m, ud, us, r) after '+'");
      }
    }
    default:
      return cur.Error(at, "not a type letter of the C data interface");
  }
}

void AppendInt(std::string* out, int64_t v) { *out += std::to_string(v); }

}  // namespace

Result<FormatInfo> ParseFormat(std::string_view format) {
  FormatInfo info;
  FormatCursor cur(format);
  FERRY_RETURN_NOT_OK(ParseFormatImpl(cur, &info));
  if (!cur.at_end()) return cur.Error(cur.pos(), "trailing characters after a complete format");
  return info;
}

Result<std::string> FormatToString(const FormatInfo& info) {
  std::string out;
  switch (info.type) {
    case TypeId::kNull:
      return std::string("n");
    case TypeId::kBool:
      return std::string("b");
    case TypeId::kInt8:
      return std::string("c");
    case TypeId::kUInt8:
      return std::string("C");
    case TypeId::kInt16:
      return std::string("s");
    case TypeId::kUInt16:
      return std::string("S");
    case TypeId::kInt32:
      return std::string("i");
    case TypeId::kUInt32:
      return std::string("I");
    case TypeId::kInt64:
      return std::string("l");
    case TypeId::kUInt64:
      return std::string("L");
    case TypeId::kHalfFloat:
      return std::string("e");
    case TypeId::kFloat:
      return std::string("f");
    case TypeId::kDouble:
      return std::string("g");
    case TypeId::kBinary:
      return std::string("z");
    case TypeId::kLargeBinary:
      return std::string("Z");
    case TypeId::kString:
      return std::string("u");
    case TypeId::kLargeString:
      return std::string("U");
    case TypeId::kBinaryView:
      return std::string("vz");
    case TypeId::kStringView:
      return std::string("vu");
    case TypeId::kDecimal32:
    case TypeId::kDecimal64:
    case TypeId::kDecimal128:
    case TypeId::kDecimal256: {
      int32_t width = info.type == TypeId::kDecimal32    ? 32
                      : info.type == TypeId::kDecimal64  ? 64
                      : info.type == TypeId::kDecimal128 ? 128
                                                         : 256;
      out = "d:";
      AppendInt(&out, info.decimal_precision);
      out += ",";
      AppendInt(&out, info.decimal_scale);
      if (width != 128) {
        out += ",";
        AppendInt(&out, width);
      }
      return out;
    }
    case TypeId::kFixedSizeBinary:
      out = "w:";
      AppendInt(&out, info.fixed_size);
      return out;
    case TypeId::kDate32:
      return std::string("tdD");
    case TypeId::kDate64:
      return std::string("tdm");
    case TypeId::kTime32:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration: {
      static constexpr char kUnits[] = {'s', 'm', 'u', 'n'};
      char unit = kUnits[static_cast<int>(info.time_unit) & 3];
      bool is32 = info.time_unit == TimeUnit::kSecond || info.time_unit == TimeUnit::kMilli;
      if (info.type == TypeId::kTime32 && !is32) {
        return Status::Invalid("time32 needs a unit of seconds or milliseconds");
      }
      if (info.type == TypeId::kTime64 && is32) {
        return Status::Invalid("time64 needs a unit of microseconds or nanoseconds");
      }
      if (info.type == TypeId::kTimestamp) {
        out = std::string("ts") + unit + ":";
        out += info.timezone;
        return out;
      }
      return std::string(info.type == TypeId::kDuration ? "tD" : "tt") + unit;
    }
    case TypeId::kIntervalMonths:
      return std::string("tiM");
    case TypeId::kIntervalDayTime:
      return std::string("tiD");
    case TypeId::kIntervalMonthDayNano:
      return std::string("tin");
    case TypeId::kList:
      return std::string("+l");
    case TypeId::kLargeList:
      return std::string("+L");
    case TypeId::kListView:
      return std::string("+vl");
    case TypeId::kLargeListView:
      return std::string("+vL");
    case TypeId::kFixedSizeList:
      out = "+w:";
      AppendInt(&out, info.fixed_size);
      return out;
    case TypeId::kStruct:
      return std::string("+s");
    case TypeId::kMap:
      return std::string("+m");
    case TypeId::kRunEndEncoded:
      return std::string("+r");
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      out = info.type == TypeId::kDenseUnion ? "+ud:" : "+us:";
      for (size_t i = 0; i < info.union_type_ids.size(); ++i) {
        if (i > 0) out += ",";
        AppendInt(&out, info.union_type_ids[i]);
      }
      return out;
    }
    case TypeId::kUninitialized:
    case TypeId::kDictionary:
    case TypeId::kExtension:
      break;
  }
  return Status::Invalid(std::string("type ") + TypeIdName(info.type) +
                         " has no format string of its own");
}

Layout LayoutOf(TypeId storage_type) noexcept {
  Layout l;
  auto set = [&l](std::initializer_list<std::pair<BufferType, int32_t>> buffers, int32_t children) {
    int32_t i = 0;
    for (const auto& [type, bits] : buffers) {
      l.buffer_type[static_cast<size_t>(i)] = type;
      l.element_size_bits[static_cast<size_t>(i)] = bits;
      ++i;
    }
    l.n_fixed_buffers = i;
    l.n_children = children;
  };
  using B = BufferType;
  switch (storage_type) {
    case TypeId::kNull:
      set({}, 0);
      break;
    case TypeId::kBool:
      set({{B::kValidity, 1}, {B::kData, 1}}, 0);
      break;
    case TypeId::kInt8:
    case TypeId::kUInt8:
      set({{B::kValidity, 1}, {B::kData, 8}}, 0);
      break;
    case TypeId::kInt16:
    case TypeId::kUInt16:
    case TypeId::kHalfFloat:
      set({{B::kValidity, 1}, {B::kData, 16}}, 0);
      break;
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kFloat:
    case TypeId::kDate32:
    case TypeId::kTime32:
    case TypeId::kIntervalMonths:
    case TypeId::kDecimal32:
      set({{B::kValidity, 1}, {B::kData, 32}}, 0);
      break;
    case TypeId::kInt64:
    case TypeId::kUInt64:
    case TypeId::kDouble:
    case TypeId::kDate64:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
    case TypeId::kIntervalDayTime:
    case TypeId::kDecimal64:
      set({{B::kValidity, 1}, {B::kData, 64}}, 0);
      break;
    case TypeId::kDecimal128:
    case TypeId::kIntervalMonthDayNano:
      set({{B::kValidity, 1}, {B::kData, 128}}, 0);
      break;
    case TypeId::kDecimal256:
      set({{B::kValidity, 1}, {B::kData, 256}}, 0);
      break;
    case TypeId::kFixedSizeBinary:
      set({{B::kValidity, 1}, {B::kData, 0}}, 0);
      break;
    case TypeId::kBinary:
    case TypeId::kString:
      set({{B::kValidity, 1}, {B::kDataOffset, 32}, {B::kData, 0}}, 0);
      break;
    case TypeId::kLargeBinary:
    case TypeId::kLargeString:
      set({{B::kValidity, 1}, {B::kDataOffset, 64}, {B::kData, 0}}, 0);
      break;
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      set({{B::kValidity, 1}, {B::kView, 128}}, 0);
      break;
    case TypeId::kList:
    case TypeId::kMap:
      set({{B::kValidity, 1}, {B::kListOffset, 32}}, 1);
      break;
    case TypeId::kLargeList:
      set({{B::kValidity, 1}, {B::kListOffset, 64}}, 1);
      break;
    case TypeId::kListView:
      set({{B::kValidity, 1}, {B::kListOffset, 32}, {B::kListSize, 32}}, 1);
      break;
    case TypeId::kLargeListView:
      set({{B::kValidity, 1}, {B::kListOffset, 64}, {B::kListSize, 64}}, 1);
      break;
    case TypeId::kFixedSizeList:
      set({{B::kValidity, 1}}, 1);
      break;
    case TypeId::kStruct:
      set({{B::kValidity, 1}}, -1);
      break;
    case TypeId::kSparseUnion:
      set({{B::kTypeId, 8}}, -1);
      break;
    case TypeId::kDenseUnion:
      set({{B::kTypeId, 8}, {B::kUnionOffset, 32}}, -1);
      break;
    case TypeId::kRunEndEncoded:
      set({}, 2);
      break;
    case TypeId::kUninitialized:
    case TypeId::kDictionary:
    case TypeId::kExtension:
      break;
  }
  return l;
}

namespace {

bool IsIntegerType(TypeId t) {
  switch (t) {
    case TypeId::kInt8:
    case TypeId::kUInt8:
    case TypeId::kInt16:
    case TypeId::kUInt16:
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kInt64:
    case TypeId::kUInt64:
      return true;
    default:
      return false;
  }
}

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
    if (!IsIntegerType(view.storage_type)) {
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

}  // namespace ferry
