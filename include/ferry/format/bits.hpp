// Bit-packed buffer helpers (validity bitmaps and boolean data), least-significant bit first.
// Inline except the word popcount, which picks POPCNT at load time.
#pragma once

#include <cstdint>
#include <cstring>

#include "ferry/abi/export.h"
#include "ferry/core/bytes.hpp"

namespace ferry {

inline bool GetBit(const uint8_t* bits, int64_t i) noexcept {
  return (bits[i >> 3] >> (i & 7)) & 1;
}

inline void SetBit(uint8_t* bits, int64_t i, bool value) noexcept {
  const uint8_t mask = static_cast<uint8_t>(1u << (i & 7));
  bits[i >> 3] = value ? static_cast<uint8_t>(bits[i >> 3] | mask)
                       : static_cast<uint8_t>(bits[i >> 3] & ~mask);
}

/// Number of set bits in the whole 64-bit words of `words` (its first size / 8 words; any
/// alignment). Uses the POPCNT instruction where the CPU has it (chosen once, at load time).
FERRY_EXPORT int64_t CountSetBitsInWords(ByteSpan words) noexcept;

/// Number of set bits in [offset, offset + length); whole 64-bit words are popcounted.
inline int64_t CountSetBits(const uint8_t* bits, int64_t offset, int64_t length) noexcept {
  int64_t count = 0;
  int64_t i = offset;
  const int64_t end = offset + length;
  while (i < end && (i & 63) != 0) count += GetBit(bits, i++);
  const int64_t n_words = (end - i) / 64;
  count += CountSetBitsInWords({bits + (i >> 3), n_words * 8});
  i += n_words * 64;
  while (i < end) count += GetBit(bits, i++);
  return count;
}

}  // namespace ferry
