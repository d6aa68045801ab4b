// UTF-8 validation (the kernel full validation uses) against the standard's edge cases.
#include "format/utf8.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

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

}  // namespace
}  // namespace ferry
