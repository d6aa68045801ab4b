// How messages print a 64-bit tag or address: "0x" and 16 lowercase hex digits, so that one
// value reads the same in every layer's errors and logs (and in the interop peer's, which prints
// the same way).
#pragma once

#include <cstdint>
#include <string>

namespace ferry {

/// `value` as "0x" followed by 16 lowercase hex digits, e.g. 0x0100000000000007. Allocates the
/// returned string; meant for error and log messages, not hot paths.
inline std::string Hex(uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(18, '0');
  out[1] = 'x';
  for (int i = 0; i < 16; ++i) out[17 - i] = kDigits[(value >> (4 * i)) & 15];
  return out;
}

}  // namespace ferry
