// Hexadecimal, the one copy: a 64-bit tag or address as it prints in messages, byte strings
// encoded and decoded (integration JSON, tickets, percent-escapes), and one digit's value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

namespace ferry {

/// `value` as "0x" followed by 16 lowercase hex digits, e.g. 0x0100000000000007, so that one
/// value reads the same in every layer's errors and logs (and in the interop peer's). Allocates
/// the returned string; meant for error and log messages, not hot paths.
inline std::string Hex(uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(18, '0');
  out[1] = 'x';
  for (int i = 0; i < 16; ++i) out[17 - i] = kDigits[(value >> (4 * i)) & 15];
  return out;
}

/// Which letters HexEncode writes: Arrow's integration JSON uses upper case, tickets lower.
enum class HexCase { kLower, kUpper };

/// The digits of one byte, most significant first, appended to `out`. No allocation beyond
/// `out`'s growth.
inline void AppendHexByte(uint8_t byte, HexCase letters, std::string* out) {
  const char* digits = letters == HexCase::kUpper ? "0123456789ABCDEF" : "0123456789abcdef";
  out->push_back(digits[byte >> 4]);
  out->push_back(digits[byte & 15]);
}

/// `bytes` as two hex digits per byte, with no prefix or separator. One allocation.
FERRY_EXPORT std::string HexEncode(std::string_view bytes, HexCase letters = HexCase::kLower);

/// The value of one hex digit (either case), or -1 when `c` is not one.
constexpr int HexDigitValue(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The bytes that `text` spells, two digits (either case) per byte. Invalid with the offset of
/// the first bad digit, or for an odd length.
FERRY_EXPORT Result<std::string> HexDecode(std::string_view text);

}  // namespace ferry
