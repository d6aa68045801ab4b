// UTF-8 validation: on x86-64 with AVX2, 32 bytes at a time by nibble lookups, whatever the mix
// of ASCII and multi-byte characters; elsewhere a 16-byte ASCII fast path and a table-free check
// of multi-byte sequences.
#include "utf8.hpp"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FERRY_UTF8_AVX2 1
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

#if defined(FERRY_UTF8_AVX2)

// The vector check follows Keiser and Lemire, "Validating UTF-8 in less than one instruction per
// byte" (2021). Each byte is judged with the one before it: three table lookups, by the previous
// byte's high and low nibbles and this byte's high nibble, each give the error classes that nibble
// allows, and a pair is bad when all three agree on one. The second and third continuation bytes
// of a long sequence, which look like "a continuation after a continuation", are told apart by the
// bytes two and three back.
constexpr uint8_t kTooShort = 1 << 0;      // a lead byte, then no continuation
constexpr uint8_t kTooLong = 1 << 1;       // an ASCII byte, then a continuation
constexpr uint8_t kOverlong3 = 1 << 2;     // E0, then 80..9F
constexpr uint8_t kTooLarge = 1 << 3;      // F4, then 90..BF; F5..FF, then 90..BF
constexpr uint8_t kSurrogate = 1 << 4;     // ED, then A0..BF
constexpr uint8_t kOverlong2 = 1 << 5;     // C0 or C1, then a continuation
constexpr uint8_t kTooLarge1000 = 1 << 6;  // F5..FF, then 80..8F
constexpr uint8_t kOverlong4 = 1 << 6;     // F0, then 80..8F (the bit is shared: F0 has no other)
constexpr uint8_t kTwoConts = 1 << 7;      // a continuation, then a continuation
constexpr uint8_t kCarry = kTooShort | kTooLong | kTwoConts;

// The classes each nibble allows: by the previous byte's high nibble, its low nibble, and this
// byte's high nibble.
constexpr uint8_t kByPrevHigh[16] = {kTooLong,
                                     kTooLong,
                                     kTooLong,
                                     kTooLong,
                                     kTooLong,
                                     kTooLong,
                                     kTooLong,
                                     kTooLong,
                                     kTwoConts,
                                     kTwoConts,
                                     kTwoConts,
                                     kTwoConts,
                                     kTooShort | kOverlong2,
                                     kTooShort,
                                     kTooShort | kOverlong3 | kSurrogate,
                                     kTooShort | kTooLarge | kTooLarge1000 | kOverlong4};
constexpr uint8_t kLarge = kCarry | kTooLarge | kTooLarge1000;
constexpr uint8_t kByPrevLow[16] = {kCarry | kOverlong3 | kOverlong2 | kOverlong4,
                                    kCarry | kOverlong2,
                                    kCarry,
                                    kCarry,
                                    kCarry | kTooLarge,
                                    kLarge,
                                    kLarge,
                                    kLarge,
                                    kLarge,
                                    kLarge,
                                    kLarge,
                                    kLarge,
                                    kLarge,
                                    kLarge | kSurrogate,
                                    kLarge,
                                    kLarge};
constexpr uint8_t kCont8 = kTooLong | kOverlong2 | kTwoConts;
constexpr uint8_t kByHigh[16] = {kTooShort,
                                 kTooShort,
                                 kTooShort,
                                 kTooShort,
                                 kTooShort,
                                 kTooShort,
                                 kTooShort,
                                 kTooShort,
                                 kCont8 | kOverlong3 | kTooLarge1000 | kOverlong4,
                                 kCont8 | kOverlong3 | kTooLarge,
                                 kCont8 | kSurrogate | kTooLarge,
                                 kCont8 | kSurrogate | kTooLarge,
                                 kTooShort,
                                 kTooShort,
                                 kTooShort,
                                 kTooShort};

// `table` in both 128-bit lanes, for _mm256_shuffle_epi8.
__attribute__((target("avx2"))) inline __m256i Table(const uint8_t (&table)[16]) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
}

__attribute__((target("avx2"))) inline __m256i HighNibbles(__m256i v) {
  return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
}

// The error classes of every (previous byte, byte) pair of `in`, `prev` being the 32 bytes before.
__attribute__((target("avx2"))) inline __m256i PairErrors(__m256i in, __m256i prev) {
  // The previous 32 bytes' second half and this block's first: alignr shifts within lanes.
  const __m256i across = _mm256_permute2x128_si256(prev, in, 0x21);
  const __m256i prev1 = _mm256_alignr_epi8(in, across, 15);
  const __m256i prev2 = _mm256_alignr_epi8(in, across, 14);
  const __m256i prev3 = _mm256_alignr_epi8(in, across, 13);
  const __m256i by_prev_high = _mm256_shuffle_epi8(Table(kByPrevHigh), HighNibbles(prev1));
  const __m256i by_prev_low =
      _mm256_shuffle_epi8(Table(kByPrevLow), _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)));
  const __m256i by_high = _mm256_shuffle_epi8(Table(kByHigh), HighNibbles(in));
  const __m256i special = _mm256_and_si256(_mm256_and_si256(by_prev_high, by_prev_low), by_high);
  // Bytes that must continue a sequence: two after E0..FF, three after F0..FF. There a
  // continuation after a continuation is right, and anything else is wrong.
  const __m256i third = _mm256_subs_epu8(prev2, _mm256_set1_epi8(static_cast<char>(0xE0 - 0x80)));
  const __m256i fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8(static_cast<char>(0xF0 - 0x80)));
  const __m256i must_continue =
      _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8(static_cast<char>(0x80)));
  return _mm256_xor_si256(must_continue, special);
}

// Non-zero where a block's last three bytes start sequences longer than what is left of it.
__attribute__((target("avx2"))) inline __m256i Unfinished(__m256i block) {
  return _mm256_subs_epu8(
      block,
      _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, static_cast<char>(0xEF),
                       static_cast<char>(0xDF), static_cast<char>(0xBF)));
}

__attribute__((target("avx2"))) Utf8Scan ScanUtf8Avx2(const uint8_t* data, int64_t size) {
  __m256i prev = _mm256_setzero_si256();
  __m256i errors = _mm256_setzero_si256();
  bool high = false;  // a byte of 0x80 or above was seen
  int64_t i = 0;
  // 64 bytes a step, so that the branch between all-ASCII and the full check is taken the same
  // way for long runs of either (text with a multi-byte character every few dozen bytes takes
  // the full check every time, instead of mispredicting every other block).
  for (; i + 64 <= size; i += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 32));
    if (_mm256_movemask_epi8(_mm256_or_si256(a, b)) == 0) {
      // ASCII: right only if nothing was left unfinished before it.
      errors = _mm256_or_si256(errors, Unfinished(prev));
    } else {
      high = true;
      errors = _mm256_or_si256(errors, _mm256_or_si256(PairErrors(a, prev), PairErrors(b, a)));
    }
    prev = b;
  }
  // The rest, then zeros: a sequence the data leaves unfinished meets them and fails.
  alignas(32) uint8_t tail[64] = {};
  std::memcpy(tail, data + i, static_cast<size_t>(size - i));
  const __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail));
  const __m256i b = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail + 32));
  const __m256i zero = _mm256_setzero_si256();
  errors = _mm256_or_si256(errors, _mm256_or_si256(PairErrors(a, prev), PairErrors(b, a)));
  errors = _mm256_or_si256(errors, PairErrors(zero, b));
  high = high || _mm256_movemask_epi8(_mm256_or_si256(a, b)) != 0;
  return {_mm256_testz_si256(errors, errors) != 0, !high};
}

// ScanStringOffsets' vector loop from offsets[i] on, while offsets[i - 1] >= 3: each byte is
// gathered as the top byte of the four ending at it, so no read starts before the data. Returns
// where it stopped.
__attribute__((target("avx2"))) int64_t ScanOffsetsAvx2(const uint8_t* offsets, int64_t i,
                                                        int64_t n, const uint8_t* data,
                                                        int32_t first, int32_t last,
                                                        bool* out_of_order, bool* split) {
  const __m256i lo = _mm256_set1_epi32(first < 3 ? 3 : first);
  const __m256i hi = _mm256_set1_epi32(last - 1);
  const __m256i end = _mm256_set1_epi32(last);
  __m256i bad = _mm256_setzero_si256();
  __m256i inside = _mm256_setzero_si256();
  for (; i + 8 <= n + 1; i += 8) {
    const __m256i cur = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offsets + 4 * i));
    const __m256i before =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offsets + 4 * (i - 1)));
    bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(before, cur));
    const __m256i at = _mm256_min_epi32(_mm256_max_epi32(cur, lo), hi);
    const __m256i word = _mm256_i32gather_epi32(reinterpret_cast<const int*>(data),
                                                _mm256_sub_epi32(at, _mm256_set1_epi32(3)), 1);
    const __m256i top = _mm256_and_si256(_mm256_srli_epi32(word, 24), _mm256_set1_epi32(0xC0));
    const __m256i continues = _mm256_cmpeq_epi32(top, _mm256_set1_epi32(0x80));
    inside = _mm256_or_si256(inside, _mm256_and_si256(continues, _mm256_cmpgt_epi32(end, cur)));
  }
  if (!_mm256_testz_si256(bad, bad)) *out_of_order = true;
  if (!_mm256_testz_si256(inside, inside)) *split = true;
  return i;
}

// OffsetsInOrder's vector loop from offsets[i] on: eight pairs at a time. Returns where it
// stopped.
__attribute__((target("avx2"))) int64_t OffsetsInOrderAvx2(const uint8_t* offsets, int64_t i,
                                                           int64_t n, bool* out_of_order) {
  __m256i bad = _mm256_setzero_si256();
  for (; i + 8 <= n + 1; i += 8) {
    const __m256i cur = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offsets + 4 * i));
    const __m256i before =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offsets + 4 * (i - 1)));
    bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(before, cur));
  }
  if (!_mm256_testz_si256(bad, bad)) *out_of_order = true;
  return i;
}

bool HasAvx2() noexcept {
  static const bool has = __builtin_cpu_supports("avx2") != 0;
  return has;
}

#endif  // FERRY_UTF8_AVX2

}  // namespace

Utf8Scan ScanUtf8(const uint8_t* data, int64_t size) noexcept {
#if defined(FERRY_UTF8_AVX2)
  if (size >= 32 && HasAvx2()) return ScanUtf8Avx2(data, size);
#endif
  // Short or without AVX2: the ASCII run first, then the check of what follows it.
  const int64_t ascii = AsciiPrefix(data, size);
  if (ascii == size) return {};
  return {ValidateUtf8Scalar(data + ascii, size - ascii), false};
}

bool ValidateUtf8(const uint8_t* data, int64_t size) noexcept { return ScanUtf8(data, size).valid; }

bool OffsetsInOrder(const uint8_t* offsets, int64_t n) noexcept {
  // Eight pairs at a time with AVX2 (GCC leaves the plain loop scalar: five instructions an
  // offset), then the rest one by one.
  bool bad = false;
  int64_t i = 1;
#if defined(FERRY_UTF8_AVX2)
  if (n >= 8 && HasAvx2()) i = OffsetsInOrderAvx2(offsets, i, n, &bad);
#endif
  for (; i <= n; ++i) {
    int32_t before;
    int32_t cur;
    std::memcpy(&before, offsets + 4 * (i - 1), sizeof(before));
    std::memcpy(&cur, offsets + 4 * i, sizeof(cur));
    bad |= cur < before;
  }
  return !bad;
}

void ScanStringOffsets(const uint8_t* offsets, int64_t n, const uint8_t* data, int32_t first,
                       int32_t last, bool* out_of_order, bool* split) noexcept {
  auto load = [offsets](int64_t i) {
    int32_t v;
    std::memcpy(&v, offsets + 4 * i, sizeof(v));
    return v;
  };
  bool bad = false;
  bool inside = false;
  int32_t prev = load(0);
  int64_t i = 1;
  auto scalar_until = [&](int64_t stop) {
    for (; i < stop; ++i) {
      const int32_t cur = load(i);
      bad |= cur < prev;
      const int32_t at = cur < first ? first : cur > last - 1 ? last - 1 : cur;
      inside |= (cur < last) & IsUtf8Continuation(data[at]);
      prev = cur;
    }
  };
#if defined(FERRY_UTF8_AVX2)
  if (HasAvx2()) {
    // Offsets below 3 (the first few strings at most, in order) go one by one.
    while (i <= n && prev < 3) scalar_until(i + 1);
    if (i <= n && last >= 4) {  // the clamped reads then start at byte 0 or later
      i = ScanOffsetsAvx2(offsets, i, n, data, first, last, &bad, &inside);
      if (i <= n) prev = load(i - 1);
    }
  }
#endif
  scalar_until(n + 1);
  if (bad) *out_of_order = true;
  if (inside) *split = true;
}

bool ValidateUtf8Scalar(const uint8_t* data, int64_t size) noexcept {
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
