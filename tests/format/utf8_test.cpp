// UTF-8 validation (the kernel full validation uses) against the standard's edge cases.
#include "format/utf8.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {
namespace {

TEST(Utf8, AcceptsAndRejectsByTheStandard) {
  auto ok = [](std::string_view s) {
    return internal::ValidateUtf8(reinterpret_cast<const uint8_t*>(s.data()),
                                  static_cast<int64_t>(s.size()));
  };
  EXPECT_TRUE(ok(""));
  EXPECT_TRUE(ok("plain ascii"));
  EXPECT_TRUE(ok("\xC2\x80"));           // U+0080
  EXPECT_TRUE(ok("\xE0\xA0\x80"));       // U+0800
  EXPECT_TRUE(ok("\xED\x9F\xBF"));       // U+D7FF
  EXPECT_TRUE(ok("\xEE\x80\x80"));       // U+E000
  EXPECT_TRUE(ok("\xF0\x90\x80\x80"));   // U+10000
  EXPECT_TRUE(ok("\xF4\x8F\xBF\xBF"));   // U+10FFFF
  EXPECT_FALSE(ok("\x80"));              // lone continuation
  EXPECT_FALSE(ok("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(ok("\xC1\xBF"));          // overlong
  EXPECT_FALSE(ok("\xE0\x9F\xBF"));      // overlong 3-byte
  EXPECT_FALSE(ok("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(ok("\xF0\x8F\xBF\xBF"));  // overlong 4-byte
  EXPECT_FALSE(ok("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(ok("\xF5\x80\x80\x80"));
  EXPECT_FALSE(ok("\xE2\x82"));  // truncated
  EXPECT_FALSE(ok("\xC3"));
  EXPECT_FALSE(ok("\xFF"));
  // Errors right at the edges of the 16- and 64-byte ASCII blocks.
  for (size_t pos : {0u, 15u, 16u, 31u, 63u, 64u, 65u, 127u}) {
    std::string s(130, 'a');
    s[pos] = static_cast<char>(0x80);
    EXPECT_FALSE(ok(s)) << pos;
    s[pos] = static_cast<char>(0xC3);
    s[pos + 1] = static_cast<char>(0xA9);
    EXPECT_TRUE(ok(s)) << pos;
  }
}

// The reference: the Unicode standard's table of well-formed byte sequences (Table 3-7), read
// one lead byte at a time. Shares nothing with the validator.
bool WellFormed(const std::vector<uint8_t>& s) {
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t b = s[i];
    size_t n = 0;
    uint8_t lo = 0x80;
    uint8_t hi = 0xBF;
    if (b <= 0x7F) {
      n = 1;
    } else if (b >= 0xC2 && b <= 0xDF) {
      n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      n = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      n = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const uint8_t lower = k == 1 ? lo : 0x80;
      const uint8_t upper = k == 1 ? hi : 0xBF;
      if (s[i + k] < lower || s[i + k] > upper) return false;
    }
    i += n;
  }
  return true;
}

bool Validate(const std::vector<uint8_t>& s) {
  return internal::ValidateUtf8(s.data(), static_cast<int64_t>(s.size()));
}

bool ValidateScalar(const std::vector<uint8_t>& s) {
  return internal::ValidateUtf8Scalar(s.data(), static_cast<int64_t>(s.size()));
}

// Every byte pair and every lead byte with two more bytes from the boundary values, at every
// place of a 32-byte block and across blocks, in ASCII of every length the vector path takes.
TEST(Utf8, EveryShortSequenceAtEveryPlaceAgreesWithTheStandard) {
  const std::vector<uint8_t> edges = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF,
                                      0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE,
                                      0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF};
  int64_t checked = 0;
  for (size_t place : {0u, 1u, 13u, 14u, 15u, 16u, 29u, 30u, 31u, 32u, 61u, 62u, 63u}) {
    // One buffer for each shape, whose bytes at `place` each case sets: the six million cases
    // allocate nothing (in the ASan tree, allocating took three quarters of the test's time).
    std::vector<uint8_t> s(64 + place % 7, 'x');
    const bool pair = place + 1 < s.size();
    for (int a = 0; a < 256; ++a) {
      for (int b = 0; b < 256; ++b) {
        s[place] = static_cast<uint8_t>(a);
        if (pair) s[place + 1] = static_cast<uint8_t>(b);
        ASSERT_EQ(Validate(s), WellFormed(s)) << place << " " << a << " " << b;
        ++checked;
      }
    }
    std::vector<uint8_t> q(70, 'x');
    for (uint8_t a : edges) {
      for (uint8_t b : edges) {
        for (uint8_t c : edges) {
          for (uint8_t d : edges) {
            q[place] = a;
            q[place + 1] = b;
            q[place + 2] = c;
            q[place + 3] = d;
            ASSERT_EQ(Validate(q), WellFormed(q))
                << place << " " << int{a} << " " << int{b} << " " << int{c} << " " << int{d};
            ++checked;
          }
        }
      }
    }
  }
  // A sequence cut by the end of the data, at each length the vector path ends on.
  for (size_t size = 32; size < 100; ++size) {
    for (const std::vector<uint8_t>& seq : std::vector<std::vector<uint8_t>>{
             {0xC3}, {0xE2, 0x82}, {0xE2}, {0xF0, 0x9F, 0x98}, {0xF0, 0x9F}, {0xF0}}) {
      std::vector<uint8_t> s(size - seq.size(), 'x');
      s.insert(s.end(), seq.begin(), seq.end());
      ASSERT_FALSE(Validate(s)) << size;
      s.push_back(0x41);
      ASSERT_FALSE(Validate(s)) << size;
    }
  }
  EXPECT_GT(checked, 1000000);
}

// Random text of every kind of character, sometimes broken one byte: the vector path, the scalar
// path and the standard's table agree.
TEST(Utf8, RandomTextAgreesWithTheStandardOnBothPaths) {
  std::mt19937_64 rng(42);
  const std::vector<std::vector<uint8_t>> chars = {{'a'},
                                                   {' '},
                                                   {0xC3, 0xA9},
                                                   {0xDF, 0xBF},
                                                   {0xE0, 0xA0, 0x80},
                                                   {0xE2, 0x82, 0xAC},
                                                   {0xED, 0x9F, 0xBF},
                                                   {0xEF, 0xBF, 0xBF},
                                                   {0xF0, 0x90, 0x80, 0x80},
                                                   {0xF4, 0x8F, 0xBF, 0xBF}};
  int64_t broken = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> s;
    const size_t n = rng() % 200;
    const bool mostly_ascii = rng() % 2 == 0;
    while (s.size() < n) {
      const auto& c = chars[mostly_ascii && rng() % 8 != 0 ? rng() % 2 : rng() % chars.size()];
      s.insert(s.end(), c.begin(), c.end());
    }
    if (!s.empty() && rng() % 2 == 0) {
      s[rng() % s.size()] = static_cast<uint8_t>(rng());
      ++broken;
    }
    const bool want = WellFormed(s);
    ASSERT_EQ(Validate(s), want) << round;
    ASSERT_EQ(ValidateScalar(s), want) << round;
    // ScanUtf8 agrees, and says ASCII exactly when no byte has its top bit set.
    const internal::Utf8Scan scan = internal::ScanUtf8(s.data(), static_cast<int64_t>(s.size()));
    ASSERT_EQ(scan.valid, want) << round;
    ASSERT_EQ(scan.ascii, std::all_of(s.begin(), s.end(), [](uint8_t b) { return b < 0x80; }))
        << round;
  }
  EXPECT_GT(broken, 5000);
}

// One byte of 0x80 or above at every place of ASCII of every length up to 200 (the vector path's
// blocks, its tail and the scalar path): ScanUtf8 no longer says ASCII.
TEST(Utf8, ScanUtf8SeesEveryByteThatIsNotAscii) {
  for (size_t n = 0; n <= 200; ++n) {
    std::vector<uint8_t> s(n, 'a');
    ASSERT_TRUE(internal::ScanUtf8(s.data(), static_cast<int64_t>(n)).ascii) << n;
    for (size_t at = 0; at < n; ++at) {
      s[at] = 0x80;
      const internal::Utf8Scan scan = internal::ScanUtf8(s.data(), static_cast<int64_t>(n));
      ASSERT_FALSE(scan.ascii) << n << " " << at;
      ASSERT_FALSE(scan.valid) << n << " " << at;  // a lone continuation byte
      s[at] = 'a';
    }
  }
}

// The offset scan full validation uses, on random offsets (in order or not) over random bytes,
// against the rule written out: every length, so that each offset takes each place of the
// vector and of the scalar head and tail.
TEST(Utf8, TheOffsetScanFindsWhatTheRuleSays) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20000; ++round) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 40);
    std::vector<uint8_t> data(1 + rng() % 120);
    for (uint8_t& b : data) b = rng() % 3 == 0 ? 0x80 | (rng() % 64) : 'a' + rng() % 26;
    std::vector<int32_t> offsets(static_cast<size_t>(n + 1));
    const auto size = static_cast<int32_t>(data.size());
    int32_t at = static_cast<int32_t>(rng() % 5 % size);
    for (int32_t& o : offsets) {
      o = at;
      at = std::min(size, at + static_cast<int32_t>(rng() % 4));
    }
    if (rng() % 3 == 0) offsets[rng() % offsets.size()] = static_cast<int32_t>(rng() % size);
    const int32_t first = std::min(offsets.front(), offsets.back());
    const int32_t last = std::max(offsets.front(), offsets.back());
    if (first >= last) continue;
    bool want_order = false;
    bool want_split = false;
    for (int64_t i = 1; i <= n; ++i) {
      want_order |= offsets[i] < offsets[i - 1];
      const int32_t o = std::clamp(offsets[i], first, last - 1);
      want_split |= offsets[i] < last && internal::IsUtf8Continuation(data[o]);
    }
    bool order = false;
    bool split = false;
    internal::ScanStringOffsets(reinterpret_cast<const uint8_t*>(offsets.data()), n, data.data(),
                                first, last, &order, &split);
    ASSERT_EQ(order, want_order) << round;
    if (!want_order) {  // out of order, the split flag means nothing
      ASSERT_EQ(split, want_split) << round;
    }
    ASSERT_EQ(internal::OffsetsInOrder(reinterpret_cast<const uint8_t*>(offsets.data()), n),
              !want_order)
        << round;
  }
}

}  // namespace
}  // namespace ferry
