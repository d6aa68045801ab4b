// PEP 3118 and NumPy typestr bridges.
#include "ferry/memview/pep3118.hpp"

#include <bit>
#include <cctype>

#include "memview/host_endian.hpp"

namespace ferry::memview {

namespace {

struct Pep3118State {
  char order = '@';  // current byte-order / size / alignment mode
  int64_t offset = 0;
  std::string out;
};

// The pack letter for an integer or float of `size` bytes.
Result<std::string> PackLetter(char kind, int64_t size) {
  if (kind == 'b' && size == 1) return std::string("{bool}");
  if (kind == 'c' && size == 8) return std::string("{complex64}");
  if (kind == 'c' && size == 16) return std::string("{complex128}");
  if (kind == 'i' || kind == 'u') {
    const bool u = kind == 'u';
    switch (size) {
      case 1:
        return std::string(u ? "C" : "c");
      case 2:
        return std::string(u ? "S" : "s");
      case 4:
        return std::string(u ? "L" : "l");
      case 8:
        return std::string(u ? "Q" : "q");
      default:
        break;
    }
  } else if (kind == 'f') {
    if (size == 2) return std::string("{float16}");
    if (size == 4) return std::string("f");
    if (size == 8) return std::string("d");
  }
  return Status::NotSupported(std::string("no pack-template type for kind '") + kind + "' of " +
                              std::to_string(size) + " bytes");
}

// Byte order suffix for a pack letter under a PEP 3118 order character.
std::string OrderSuffix(char kind, int64_t size, char order, const std::string& letter) {
  if (size == 1 || order == '@' || order == '=' || order == '^') return letter;
  const bool little = order == '<';
  if (kind == 'f' && size != 2) return size == 4 ? (little ? "e" : "g") : (little ? "E" : "G");
  return letter + (little ? "<" : ">");
}

Status Error(std::string_view format, size_t at, const std::string& why) {
  return Status::Invalid("PEP 3118 format \"" + std::string(format) + "\": " + why + " at offset " +
                         std::to_string(at));
}

Status ParsePep3118(std::string_view format, size_t* pos, Pep3118State* st, int depth,
                    bool in_struct) {
  if (depth > 16) return Error(format, *pos, "structs nest too deeply");
  while (*pos < format.size()) {
    const size_t at = *pos;
    char c = format[*pos];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++*pos;
      continue;
    }
    if (c == '}') {
      if (!in_struct) return Error(format, at, "unmatched '}'");
      ++*pos;
      return Status::OK();
    }
    if (c == '@' || c == '=' || c == '<' || c == '>' || c == '!' || c == '^') {
      st->order = c == '!' ? '>' : c;
      ++*pos;
      continue;
    }
    if (c == ':') {  // a member name, ":name:"
      const size_t end = format.find(':', at + 1);
      if (end == std::string_view::npos) return Error(format, at, "unterminated member name");
      *pos = end + 1;
      continue;
    }
    if (c == '(') return Error(format, at, "sub-array shapes are not supported");
    int64_t count = 1;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      count = 0;
      while (*pos < format.size() && std::isdigit(static_cast<unsigned char>(format[*pos]))) {
        if (__builtin_mul_overflow(count, 10, &count) ||
            __builtin_add_overflow(count, format[*pos] - '0', &count)) {
          return Error(format, at, "count overflows");
        }
        ++*pos;
      }
      if (*pos >= format.size()) return Error(format, at, "a count with no type");
      c = format[*pos];
    }
    const size_t letter_at = *pos;
    ++*pos;
    if (c == 'T') {
      if (*pos >= format.size() || format[*pos] != '{')
        return Error(format, letter_at, "'T' without '{'");
      ++*pos;
      for (int64_t k = 0; k < count; ++k) {
        size_t inner = *pos;
        FERRY_RETURN_NOT_OK(ParsePep3118(format, &inner, st, depth + 1, true));
        if (k + 1 == count) *pos = inner;
      }
      continue;
    }
    // '@' has native sizes and alignment, '^' native sizes only, the others standard sizes.
    const bool native = st->order == '@' || st->order == '^';
    char kind = 0;
    int64_t size = 0;
    switch (c) {
      case 'x':
        kind = 'x';
        size = 1;
        break;
      case 'c':
      case 'B':
      case 's':
        kind = 'u';
        size = 1;
        break;
      case '?':
        kind = 'b';
        size = 1;
        break;
      case 'b':
        kind = 'i';
        size = 1;
        break;
      case 'h':
        kind = 'i';
        size = 2;
        break;
      case 'H':
        kind = 'u';
        size = 2;
        break;
      case 'i':
        kind = 'i';
        size = 4;
        break;
      case 'I':
        kind = 'u';
        size = 4;
        break;
      case 'l':
        kind = 'i';
        size = native ? static_cast<int64_t>(sizeof(long)) : 4;
        break;
      case 'L':
        kind = 'u';
        size = native ? static_cast<int64_t>(sizeof(long)) : 4;
        break;
      case 'q':
        kind = 'i';
        size = 8;
        break;
      case 'Q':
        kind = 'u';
        size = 8;
        break;
      case 'n':
        kind = 'i';
        size = static_cast<int64_t>(sizeof(long));
        break;
      case 'N':
        kind = 'u';
        size = static_cast<int64_t>(sizeof(long));
        break;
      case 'f':
        kind = 'f';
        size = 4;
        break;
      case 'd':
        kind = 'f';
        size = 8;
        break;
      case 'e':
        kind = 'f';
        size = 2;
        break;
      case 'Z': {
        // A complex number of two of the float that follows, real part first.
        const char part = *pos < format.size() ? format[*pos] : '\0';
        if (part != 'f' && part != 'd') {
          return Error(format, letter_at,
                       "a complex number ('Z') needs 'f' or 'd' after it (long double has no "
                       "pack-template type)");
        }
        ++*pos;
        kind = 'c';
        size = part == 'f' ? 8 : 16;
        break;
      }
      case 'P':
        return Error(format, letter_at, "pointers ('P') are not supported");
      case 'p':
        return Error(format, letter_at, "Pascal strings ('p') are not supported");
      default:
        return Error(format, letter_at, std::string("unknown format character '") + c + "'");
    }
    if (st->order == '@' && kind != 'x' && size > 1) {
      // '@' aligns each member to its natural alignment: its size for these types, a complex
      // number's part's size for it.
      const int64_t natural = kind == 'c' ? size / 2 : size;
      const int64_t pad = (natural - st->offset % natural) % natural;
      if (pad > 0) st->out += "x" + std::to_string(pad) + " ";
      st->offset += pad;
    }
    if (kind == 'x') {
      st->out += "x" + std::to_string(count) + " ";
    } else if (c == 's') {
      st->out += "C" + std::to_string(count) + " ";  // a byte string of `count` bytes
    } else {
      FERRY_ASSIGN_OR_RAISE(std::string letter, PackLetter(kind, size));
      st->out += OrderSuffix(kind, size, st->order, letter);
      if (count != 1) st->out += std::to_string(count);
      st->out += " ";
    }
    int64_t bytes = 0;
    if (__builtin_mul_overflow(size, count, &bytes) ||
        __builtin_add_overflow(st->offset, bytes, &st->offset)) {
      return Error(format, at, "item size overflows");
    }
  }
  if (in_struct) return Error(format, *pos, "unterminated 'T{'");
  return Status::OK();
}

}  // namespace

Result<std::string> PackFormatFromPep3118(std::string_view format) {
  Pep3118State st;
  size_t pos = 0;
  FERRY_RETURN_NOT_OK(ParsePep3118(format, &pos, &st, 0, false));
  while (!st.out.empty() && st.out.back() == ' ') st.out.pop_back();
  return st.out;
}

Result<std::string> Pep3118FromItemDesc(const ItemDesc& desc) {
  std::string out;
  int64_t offset = 0;
  for (const ItemComponent& c : desc.components) {
    if (c.offset > offset) out += std::to_string(c.offset - offset) + "x";
    if (c.low_float != LowFloat::kNone && c.low_float != LowFloat::kFloat16) {
      return Status::NotSupported(
          "PEP 3118 has no code for " + std::string(LowFloatName(c.low_float)) +
          (c.size == 1 ? " (exported without a format, its items read as bytes)" : ""));
    }
    const char kind = c.low_float == LowFloat::kFloat16 ? 'f' : ItemKind(c.format);
    char letter = 0;
    if (c.low_float == LowFloat::kFloat16) {
      letter = 'e';
    } else if (kind == 'b') {
      letter = '?';
    } else if (kind == 'c') {
      letter = c.size == 8 ? 'f' : 'd';  // after the 'Z' written below
    } else if (kind == 'f') {
      letter = c.size == 4 ? 'f' : 'd';
    } else {
      switch (c.size) {
        case 1:
          letter = kind == 'u' ? 'B' : 'b';
          break;
        case 2:
          letter = kind == 'u' ? 'H' : 'h';
          break;
        case 4:
          letter = kind == 'u' ? 'I' : 'i';
          break;
        case 8:
          letter = kind == 'u' ? 'Q' : 'q';
          break;
        default:
          return Status::NotSupported("no PEP 3118 type of " + std::to_string(c.size) + " bytes");
      }
    }
    out += c.little_endian ? '<' : '>';
    if (c.repeat != 1) out += std::to_string(c.repeat);
    if (kind == 'c') out += 'Z';
    out += letter;
    offset = c.offset + c.size * c.repeat;
  }
  if (desc.item_size > offset) out += std::to_string(desc.item_size - offset) + "x";
  if (out.empty()) out = "B";  // an empty item reads as bytes
  return out;
}

Result<std::string> NumpyTypestrFromItemDesc(const ItemDesc& desc) {
  if (desc.components.size() != 1 || desc.components[0].offset != 0 ||
      desc.components[0].size * desc.components[0].repeat != desc.item_size) {
    return Status::NotSupported("a NumPy typestr describes one scalar type; this item has " +
                                std::to_string(desc.components.size()) + " members");
  }
  const ItemComponent& c = desc.components[0];
  if (c.low_float == LowFloat::kFloat16 && c.repeat == 1) {
    return std::string(c.little_endian ? "<f2" : ">f2");
  }
  if (c.low_float != LowFloat::kNone) {
    return Status::NotSupported("a NumPy typestr has no code for " +
                                std::string(LowFloatName(c.low_float)));
  }
  if (c.repeat != 1) {
    if (c.format == 'C') return "|V" + std::to_string(c.repeat);
    return Status::NotSupported("a repeated member has no NumPy typestr");
  }
  const char kind = ItemKind(c.format);
  const char order = c.size == 1 ? '|' : (c.little_endian ? '<' : '>');
  return std::string(1, order) + kind + std::to_string(c.size);
}

Result<std::string> PackFormatFromNumpyTypestr(std::string_view typestr) {
  if (typestr.size() < 3)
    return Status::Invalid("NumPy typestr \"" + std::string(typestr) + "\" is too short");
  const char order = typestr[0];
  const char kind = typestr[1];
  int64_t size = 0;
  for (size_t i = 2; i < typestr.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(typestr[i])) || size > (1 << 24)) {
      return Status::Invalid("NumPy typestr \"" + std::string(typestr) + "\": bad byte count");
    }
    size = size * 10 + (typestr[i] - '0');
  }
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return Status::Invalid("NumPy typestr \"" + std::string(typestr) + "\": bad byte order '" +
                           std::string(1, order) + "'");
  }
  if (kind == 'b' && size == 1) return std::string("{bool}");
  if (kind == 'V') return "C" + std::to_string(size);
  if (kind != 'i' && kind != 'u' && kind != 'f' && kind != 'c') {
    return Status::NotSupported("NumPy kind '" + std::string(1, kind) +
                                "' has no pack-template type");
  }
  FERRY_ASSIGN_OR_RAISE(std::string letter, PackLetter(kind, size));
  const char effective = order == '=' ? (internal::kHostLittle ? '<' : '>') : order;
  return OrderSuffix(kind, size, effective == '|' ? '@' : effective, letter);
}

}  // namespace ferry::memview
