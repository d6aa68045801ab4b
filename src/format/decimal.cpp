// Decimal conversions over 256-bit magnitudes held as four 64-bit limbs.
#include "ferry/format/decimal.hpp"

#include <algorithm>
#include <cstring>

namespace ferry {

namespace {

__extension__ typedef unsigned __int128 u128;  // GCC/Clang builtin, exempt from -Wpedantic

struct U256 {
  uint64_t limb[4] = {0, 0, 0, 0};  // little-endian limbs
};

// x = x * 10 + digit; returns false on overflow past 256 bits.
bool MulAdd10(U256* x, uint32_t digit) {
  u128 carry = digit;
  for (uint64_t& l : x->limb) {
    u128 v = static_cast<u128>(l) * 10 + carry;
    l = static_cast<uint64_t>(v);
    carry = v >> 64;
  }
  return carry == 0;
}

// x = x / d; returns the remainder.
uint32_t DivSmall(U256* x, uint32_t d) {
  u128 rem = 0;
  for (int i = 3; i >= 0; --i) {
    u128 cur = (rem << 64) | x->limb[i];
    x->limb[i] = static_cast<uint64_t>(cur / d);
    rem = cur % d;
  }
  return static_cast<uint32_t>(rem);
}

bool IsZero(const U256& x) { return (x.limb[0] | x.limb[1] | x.limb[2] | x.limb[3]) == 0; }

void Negate(U256* x) {
  u128 carry = 1;
  for (uint64_t& l : x->limb) {
    u128 v = static_cast<u128>(~l) + carry;
    l = static_cast<uint64_t>(v);
    carry = v >> 64;
  }
}

}  // namespace

Status ParseDecimal(std::string_view text, int32_t precision, int32_t scale, int32_t bitwidth,
                    uint8_t* out) {
  const std::string shown(text);
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  std::string digits;
  int32_t frac = 0;
  bool seen_point = false;
  bool any = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits.push_back(c);
      any = true;
      if (seen_point) ++frac;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      return Status::Invalid("decimal \"" + shown + "\": unexpected '" + std::string(1, c) +
                             "' at position " + std::to_string(i));
    }
  }
  if (!any) return Status::Invalid("decimal \"" + shown + "\": no digits");
  // Align to the scale: drop trailing zeros beyond it, or pad with zeros up to it.
  while (frac > scale) {
    if (digits.empty()) {
      // Every digit was a dropped zero: the value is 0 at any scale.
      frac = scale;
      break;
    }
    if (digits.back() != '0') {
      return Status::Invalid("decimal \"" + shown + "\" has more fractional digits than scale " +
                             std::to_string(scale));
    }
    digits.pop_back();
    --frac;
  }
  if (scale - frac > 80) return Status::Invalid("decimal \"" + shown + "\": scale too large");
  digits.append(static_cast<size_t>(scale - frac), '0');
  const size_t first = std::min(digits.find_first_not_of('0'), digits.size());
  const size_t significant = digits.size() - first;
  if (significant > static_cast<size_t>(precision)) {
    return Status::Invalid("decimal \"" + shown + "\" needs " + std::to_string(significant) +
                           " digits but the precision is " + std::to_string(precision));
  }
  U256 value;
  for (size_t k = first; k < digits.size(); ++k) {
    if (!MulAdd10(&value, static_cast<uint32_t>(digits[k] - '0'))) {
      return Status::OutOfRange("decimal \"" + shown + "\" overflows 256 bits");
    }
  }
  if (negative) Negate(&value);
  std::memcpy(out, value.limb, static_cast<size_t>(bitwidth / 8));
  return Status::OK();
}

std::string DecimalToString(const uint8_t* bytes, int32_t bitwidth, int32_t scale) {
  U256 value;
  const size_t n = static_cast<size_t>(bitwidth / 8);
  std::memcpy(value.limb, bytes, n);
  const bool negative = (bytes[n - 1] & 0x80) != 0;
  if (negative) {
    // Sign-extend to 256 bits, then take the magnitude.
    auto* raw = reinterpret_cast<uint8_t*>(value.limb);
    std::memset(raw + n, 0xFF, 32 - n);
    Negate(&value);
  }
  std::string digits;
  if (IsZero(value)) digits = "0";
  while (!IsZero(value)) digits.push_back(static_cast<char>('0' + DivSmall(&value, 10)));
  std::reverse(digits.begin(), digits.end());
  std::string out;
  if (scale <= 0) {
    out = digits;
    if (digits != "0") out.append(static_cast<size_t>(-scale), '0');
  } else {
    if (digits.size() <= static_cast<size_t>(scale)) {
      digits.insert(0, static_cast<size_t>(scale) - digits.size() + 1, '0');
    }
    out = digits.substr(0, digits.size() - static_cast<size_t>(scale)) + "." +
          digits.substr(digits.size() - static_cast<size_t>(scale));
  }
  return negative ? "-" + out : out;
}

}  // namespace ferry
