// Hex: tags and addresses checked against printf's own formatting; byte strings against
// hand-written spellings and a round trip of every byte value.
#include "ferry/core/hex.hpp"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>

namespace ferry {
namespace {

TEST(Hex, PrintsSixteenLowercaseDigitsAfter0x) {
  EXPECT_EQ(Hex(0), "0x0000000000000000");
  EXPECT_EQ(Hex(0x0100000000000007ULL), "0x0100000000000007");
  EXPECT_EQ(Hex(UINT64_MAX), "0xffffffffffffffff");
  for (uint64_t v : {uint64_t{1}, uint64_t{0xabcdef}, uint64_t{0x8000000000000000ULL},
                     uint64_t{0x00e0000000000002ULL}, uint64_t{0x1122334455667788ULL}}) {
    char expected[24];
    std::snprintf(expected, sizeof(expected), "0x%016" PRIx64, v);
    EXPECT_EQ(Hex(v), expected);
  }
}

TEST(Hex, EncodesBytesInEitherCase) {
  EXPECT_EQ(HexEncode(""), "");
  EXPECT_EQ(HexEncode(std::string("\x00\x0f\xab\xff", 4)), "000fabff");
  EXPECT_EQ(HexEncode(std::string("\x00\x0f\xab\xff", 4), HexCase::kUpper), "000FABFF");
  std::string out;
  AppendHexByte(0x7e, HexCase::kUpper, &out);
  EXPECT_EQ(out, "7E");
}

TEST(Hex, DecodesWhatItEncodesForEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  for (HexCase letters : {HexCase::kLower, HexCase::kUpper}) {
    Result<std::string> back = HexDecode(HexEncode(all, letters));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, all);
  }
  Result<std::string> mixed = HexDecode("aBcD");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(*mixed, "\xab\xcd");
}

TEST(Hex, DecodeNamesTheBadDigitAndItsOffset) {
  Result<std::string> odd = HexDecode("abc");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("odd length"), std::string::npos);
  Result<std::string> bad = HexDecode("00ag");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'g' at offset 3"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(HexDigitValue('g'), -1);
  EXPECT_EQ(HexDigitValue('F'), 15);
}

}  // namespace
}  // namespace ferry
