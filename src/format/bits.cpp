// Popcount over bitmaps: an AVX2 nibble-table kernel where the CPU has AVX2, POPCNT otherwise,
// and a portable loop as the last resort. The choice is made once per process.
#include "ferry/format/bits.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FERRY_X86_DISPATCH 1
#endif

namespace ferry {

namespace {

#if FERRY_X86_DISPATCH
__attribute__((target("popcnt")))
#endif
int64_t
CountWordsScalar(const uint8_t* words, int64_t n_words) noexcept {
  // Four independent accumulators keep several popcounts in flight per cycle.
  int64_t c0 = 0;
  int64_t c1 = 0;
  int64_t c2 = 0;
  int64_t c3 = 0;
  int64_t w = 0;
  for (; w + 4 <= n_words; w += 4) {
    uint64_t v[4];
    std::memcpy(v, words + w * 8, sizeof(v));
    c0 += __builtin_popcountll(v[0]);
    c1 += __builtin_popcountll(v[1]);
    c2 += __builtin_popcountll(v[2]);
    c3 += __builtin_popcountll(v[3]);
  }
  for (; w < n_words; ++w) {
    uint64_t v;
    std::memcpy(&v, words + w * 8, sizeof(v));
    c0 += __builtin_popcountll(v);
  }
  return c0 + c1 + c2 + c3;
}

#if FERRY_X86_DISPATCH
int64_t CountWordsPortable(const uint8_t* words, int64_t n_words) noexcept {
  int64_t c = 0;
  for (int64_t w = 0; w < n_words; ++w) {
    uint64_t v;
    std::memcpy(&v, words + w * 8, sizeof(v));
    c += __builtin_popcountll(v);
  }
  return c;
}

// Counts bits per byte with a 16-entry table over nibbles, summing bytes with SAD (W. Mula).
__attribute__((target("avx2,popcnt"))) int64_t CountWordsAvx2(const uint8_t* words,
                                                              int64_t n_words) noexcept {
  const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2,
                                         1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i low_mask = _mm256_set1_epi8(0x0F);
  __m256i total = _mm256_setzero_si256();
  int64_t w = 0;
  for (; w + 4 <= n_words; w += 4) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + w * 8));
    const __m256i lo = _mm256_and_si256(v, low_mask);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_mask);
    const __m256i bytes =
        _mm256_add_epi8(_mm256_shuffle_epi8(table, lo), _mm256_shuffle_epi8(table, hi));
    total = _mm256_add_epi64(total, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
  }
  int64_t count = _mm256_extract_epi64(total, 0) + _mm256_extract_epi64(total, 1) +
                  _mm256_extract_epi64(total, 2) + _mm256_extract_epi64(total, 3);
  return count + CountWordsScalar(words + w * 8, n_words - w);
}

using CountFn = int64_t (*)(const uint8_t*, int64_t) noexcept;

CountFn ChooseCount() noexcept {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return &CountWordsAvx2;
  if (__builtin_cpu_supports("popcnt")) return &CountWordsScalar;
  return &CountWordsPortable;
}
#endif

}  // namespace

int64_t CountSetBitsInWords(ByteSpan words) noexcept {
#if FERRY_X86_DISPATCH
  static const CountFn count = ChooseCount();
  return count(words.data, words.size / 8);
#else
  return CountWordsScalar(words.data, words.size / 8);
#endif
}

}  // namespace ferry
