// Format strings of the Arrow C data interface: parsing with errors that name the position, and
// printing.
#include "ferry/format/format_string.hpp"

#include <charconv>
#include <cstring>
#include <limits>

namespace ferry {

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

}  // namespace ferry
