// Pack-template item formats: parsing with offsets, sizes and alignment, and item decoding.
#include "ferry/memview/format.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <string>

#include "memview/host_endian.hpp"

namespace ferry::memview {

namespace {

struct Letter {
  int64_t size;
  int64_t align;        // alignment under `|`; 0 = none
  int64_t native_size;  // size with `!`/`_`; 0 = modifiers not allowed
  int64_t native_align;
  int order;  // 0 native, 1 forced little, 2 forced big
};

// The size, alignment and byte-order rules of one format letter; size 0 means not a letter.
Letter LetterInfo(char c) {
  switch (c) {
    case 'x':  // padding: no member
    case 'c':
    case 'C':
      return {1, 0, 0, 0, 0};
    case 's':
    case 'S':
      return {2, alignof(int16_t), sizeof(short), alignof(short), 0};
    case 'n':
      return {2, alignof(int16_t), 0, 0, 2};
    case 'v':
      return {2, alignof(int16_t), 0, 0, 1};
    case 'i':
    case 'I':
      return {sizeof(int), alignof(int), sizeof(int), alignof(int), 0};
    case 'l':
    case 'L':
      return {4, alignof(int32_t), sizeof(long), alignof(long), 0};
    case 'N':
      return {4, alignof(int32_t), 0, 0, 2};
    case 'V':
      return {4, alignof(int32_t), 0, 0, 1};
    case 'f':
      return {4, alignof(float), 0, 0, 0};
    case 'e':
      return {4, alignof(float), 0, 0, 1};
    case 'g':
      return {4, alignof(float), 0, 0, 2};
    case 'q':
    case 'Q':
      return {8, alignof(int64_t), sizeof(long long), alignof(long long), 0};
    case 'd':
      return {8, alignof(double), 0, 0, 0};
    case 'E':
      return {8, alignof(double), 0, 0, 1};
    case 'G':
      return {8, alignof(double), 0, 0, 2};
    case 'j':
    case 'J':
      return {sizeof(intptr_t), alignof(intptr_t), sizeof(intptr_t), alignof(intptr_t), 0};
    default:
      return {0, 0, 0, 0, 0};
  }
}

// A type named in braces: its ItemComponent::format letter, size and alignment in bytes, and
// the low-precision float it is (kNone for bool and complex). Multi-byte ones take a byte order.
struct Braced {
  char letter = 0;  // 0: not a known name
  int64_t size = 0;
  int64_t align = 0;
  LowFloat low_float = LowFloat::kNone;
};

Braced BracedType(std::string_view name) {
  if (name == "bool") return {kBoolLetter, 1, 1};
  if (name == "complex64") return {kComplexLetter, 8, alignof(float)};
  if (name == "complex128") return {kComplexLetter, 16, alignof(double)};
  const LowFloat type = LowFloatFromName(name);
  if (type == LowFloat::kNone) return {};
  const int64_t bytes = LowFloatBytes(type);
  return {kLowFloatLetter, bytes, bytes, type};
}

Status Error(std::string_view format, size_t at, const std::string& why) {
  return Status::Invalid("item format \"" + std::string(format) + "\": " + why + " at offset " +
                         std::to_string(at));
}

bool Add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
bool Mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

}  // namespace

Result<ItemDesc> ParseItemFormat(std::string_view format) {
  ItemDesc desc;
  size_t pos = 0;
  auto skip_space = [&] {
    while (pos < format.size() && std::isspace(static_cast<unsigned char>(format[pos]))) ++pos;
  };
  skip_space();
  if (pos < format.size() && format[pos] == '|') {
    desc.aligned = true;
    ++pos;
  }
  int64_t offset = 0;
  int64_t max_align = 1;
  while (true) {
    skip_space();
    if (pos >= format.size()) break;
    const size_t token_at = pos;
    Braced named;
    if (format[pos] == '{') {
      const size_t close = format.find('}', pos);
      if (close == std::string_view::npos) return Error(format, token_at, "unterminated '{'");
      named = BracedType(format.substr(pos + 1, close - pos - 1));
      if (named.letter == 0) {
        return Error(format, token_at,
                     "unknown type '" + std::string(format.substr(pos, close - pos + 1)) +
                         "' (braces name {bool}, {complex64}, {complex128} or a low-precision "
                         "float such as {float16} or {float8_e4m3fn})");
      }
      pos = close;
    }
    const char c = format[pos++];
    const int64_t braced = named.size;
    const Letter letter =
        named.letter == 0 ? LetterInfo(c) : Letter{named.size, named.align, 0, 0, 0};
    if (letter.size == 0) {
      return Error(format, token_at, std::string("invalid type character '") + c + "'");
    }
    bool native = false;
    int order = letter.order;
    bool order_given = false;
    while (pos < format.size() &&
           (format[pos] == '!' || format[pos] == '_' || format[pos] == '<' || format[pos] == '>')) {
      const char m = format[pos];
      // A multi-byte braced type takes a byte order, and never a native size.
      const bool orderable = braced > 1 && (m == '<' || m == '>');
      if (letter.native_size == 0 && !orderable) {
        if (braced > 1) {
          return Error(format, pos,
                       std::string("'") + m + "' is not allowed after '" +
                           std::string(format.substr(token_at, pos - token_at)) +
                           "' (a byte order, '<' or '>', is)");
        }
        return Error(format, pos,
                     std::string("'") + m + "' is not allowed after '" + c +
                         "' (only after s S i I l L q Q j J)");
      }
      if (m == '!' || m == '_') {
        native = true;
      } else {
        if (order_given) return Error(format, pos, "a second byte-order modifier ('<' or '>')");
        order_given = true;
        order = m == '<' ? 1 : 2;
      }
      ++pos;
    }
    int64_t count = 1;
    if (pos < format.size() && std::isdigit(static_cast<unsigned char>(format[pos]))) {
      const size_t count_at = pos;
      count = 0;
      while (pos < format.size() && std::isdigit(static_cast<unsigned char>(format[pos]))) {
        if (!Mul(count, 10, &count) || !Add(count, format[pos] - '0', &count)) {
          return Error(format, count_at, "count overflows");
        }
        ++pos;
      }
    }
    const int64_t size = native ? letter.native_size : letter.size;
    const int64_t align = native ? letter.native_align : letter.align;
    if (desc.aligned && align > 1) {
      offset = (offset + align - 1) / align * align;
      max_align = std::max(max_align, align);
    }
    int64_t bytes = 0;
    if (!Mul(size, count, &bytes)) return Error(format, token_at, "item size overflows");
    if (c != 'x') {
      ItemComponent comp;
      comp.format = named.letter == 0 ? c : named.letter;
      comp.low_float = named.low_float;
      comp.native_size = native;
      comp.little_endian = order == 0 ? internal::kHostLittle : order == 1;
      comp.offset = offset;
      comp.size = size;
      comp.repeat = count;
      desc.components.push_back(comp);
    }
    if (!Add(offset, bytes, &offset)) return Error(format, token_at, "item size overflows");
  }
  if (desc.aligned) offset = (offset + max_align - 1) / max_align * max_align;
  desc.item_size = offset;
  return desc;
}

char ItemKind(char letter) noexcept {
  switch (letter) {
    case 'c':
    case 's':
    case 'i':
    case 'l':
    case 'q':
    case 'j':
      return 'i';
    case 'C':
    case 'S':
    case 'I':
    case 'L':
    case 'Q':
    case 'J':
    case 'n':
    case 'v':
    case 'N':
    case 'V':
      return 'u';
    case 'f':
    case 'e':
    case 'g':
    case 'd':
    case 'E':
    case 'G':
      return 'f';
    case kBoolLetter:
      return 'b';
    case kComplexLetter:
      return 'c';
    default:
      return 0;
  }
}

namespace {

template <typename T>
T LoadOrdered(const uint8_t* p, bool little) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, p, sizeof(T));
  if (little != internal::kHostLittle) std::reverse(bytes, bytes + sizeof(T));
  T v;
  std::memcpy(&v, bytes, sizeof(T));
  return v;
}

ItemScalar DecodeOne(const ItemComponent& c, const uint8_t* p) {
  if (c.low_float != LowFloat::kNone) {
    return DecodeLowFloat(c.low_float,
                          c.size == 2 ? LoadOrdered<uint16_t>(p, c.little_endian) : uint32_t{*p});
  }
  const bool le = c.little_endian;
  switch (c.format) {
    case 'c':
      return static_cast<int64_t>(static_cast<int8_t>(*p));
    case 'C':
    case kBoolLetter:
      return static_cast<uint64_t>(*p);
    case 'f':
    case 'e':
    case 'g':
      return static_cast<double>(LoadOrdered<float>(p, le));
    case 'd':
    case 'E':
    case 'G':
      return LoadOrdered<double>(p, le);
    case 'n':
    case 'v':
      return static_cast<uint64_t>(LoadOrdered<uint16_t>(p, le));
    case 'N':
    case 'V':
      return static_cast<uint64_t>(LoadOrdered<uint32_t>(p, le));
    default:
      break;
  }
  const bool is_signed = ItemKind(c.format) == 'i';
  switch (c.size) {
    case 2:
      return is_signed ? ItemScalar(static_cast<int64_t>(LoadOrdered<int16_t>(p, le)))
                       : ItemScalar(static_cast<uint64_t>(LoadOrdered<uint16_t>(p, le)));
    case 4:
      return is_signed ? ItemScalar(static_cast<int64_t>(LoadOrdered<int32_t>(p, le)))
                       : ItemScalar(static_cast<uint64_t>(LoadOrdered<uint32_t>(p, le)));
    default:
      return is_signed ? ItemScalar(LoadOrdered<int64_t>(p, le))
                       : ItemScalar(LoadOrdered<uint64_t>(p, le));
  }
}

}  // namespace

ItemValue DecodeItem(const ItemDesc& desc, const uint8_t* item) {
  if (desc.components.empty()) return std::monostate{};
  const ItemComponent& first = desc.components[0];
  if (desc.components.size() == 1 && first.repeat == 1 &&
      LowFloatValuesPerByte(first.low_float) == 1 && first.format != kComplexLetter) {
    return DecodeOne(first, item + first.offset);
  }
  std::vector<ItemScalar> out;
  for (const ItemComponent& c : desc.components) {
    for (int64_t r = 0; r < c.repeat; ++r) {
      const uint8_t* at = item + c.offset + r * c.size;
      if (c.low_float == LowFloat::kFloat4E2M1FnX2) {  // two values, the low nibble first
        out.push_back(DecodeLowFloat(c.low_float, *at));
        out.push_back(DecodeLowFloat(c.low_float, static_cast<uint8_t>(*at >> 4)));
        continue;
      }
      if (c.format == kComplexLetter) {  // two values, the real part first
        const bool le = c.little_endian;
        const bool wide = c.size == 16;
        out.push_back(wide ? LoadOrdered<double>(at, le) : LoadOrdered<float>(at, le));
        out.push_back(wide ? LoadOrdered<double>(at + 8, le) : LoadOrdered<float>(at + 4, le));
        continue;
      }
      out.push_back(DecodeOne(c, at));
    }
  }
  return out;
}

}  // namespace ferry::memview
