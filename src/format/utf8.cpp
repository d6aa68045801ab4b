// UTF-8 validation: a 16-byte ASCII fast path and a table-free check of multi-byte sequences.
#include "utf8.hpp"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ferry::internal {

namespace {

// Length of the leading ASCII run starting at p (checked in 16-byte blocks).
inline int64_t AsciiPrefix(const uint8_t* p, int64_t n) noexcept {
  int64_t i = 0;
#if defined(__SSE2__)
  for (; i + 64 <= n; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 48));
    __m128i any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
    if (_mm_movemask_epi8(any) != 0) break;
  }
  for (; i + 16 <= n; i += 16) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    int mask = _mm_movemask_epi8(a);
    if (mask != 0) return i + __builtin_ctz(static_cast<unsigned>(mask));
  }
#else
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if ((w & 0x8080808080808080ULL) != 0) break;
  }
#endif
  while (i < n && p[i] < 0x80) ++i;
  return i;
}

}  // namespace

bool ValidateUtf8(const uint8_t* data, int64_t size) noexcept {
  int64_t i = 0;
  while (i < size) {
    i += AsciiPrefix(data + i, size - i);
    if (i >= size) break;
    // Decode multi-byte sequences until the next ASCII byte.
    while (i < size && data[i] >= 0x80) {
      const uint8_t b0 = data[i];
      if (b0 < 0xC2) return false;  // continuation byte or overlong 2-byte lead
      if (b0 < 0xE0) {
        if (i + 1 >= size || !IsUtf8Continuation(data[i + 1])) return false;
        i += 2;
      } else if (b0 < 0xF0) {
        if (i + 2 >= size) return false;
        const uint8_t b1 = data[i + 1];
        if (!IsUtf8Continuation(b1) || !IsUtf8Continuation(data[i + 2])) return false;
        if (b0 == 0xE0 && b1 < 0xA0) return false;   // overlong
        if (b0 == 0xED && b1 >= 0xA0) return false;  // UTF-16 surrogate
        i += 3;
      } else if (b0 < 0xF5) {
        if (i + 3 >= size) return false;
        const uint8_t b1 = data[i + 1];
        if (!IsUtf8Continuation(b1) || !IsUtf8Continuation(data[i + 2]) ||
            !IsUtf8Continuation(data[i + 3])) {
          return false;
        }
        if (b0 == 0xF0 && b1 < 0x90) return false;   // overlong
        if (b0 == 0xF4 && b1 >= 0x90) return false;  // above U+10FFFF
        i += 4;
      } else {
        return false;
      }
    }
  }
  return true;
}

}  // namespace ferry::internal
