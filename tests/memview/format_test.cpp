// Pack-template item formats: sizes, offsets, alignment, errors and decoding, by hand.
#include "ferry/memview/format.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "support/test_util.hpp"

namespace ferry::memview {
namespace {

using ::testing::HasSubstr;

int64_t SizeOf(const char* format) {
  auto d = ParseItemFormat(format);
  EXPECT_TRUE(d.ok()) << format << ": " << d.status().message();
  return d.ok() ? d->item_size : -1;
}

TEST(ItemFormat, SingleLetterSizes) {
  EXPECT_EQ(SizeOf("x"), 1);
  EXPECT_EQ(SizeOf("c"), 1);
  EXPECT_EQ(SizeOf("C"), 1);
  EXPECT_EQ(SizeOf("s"), 2);
  EXPECT_EQ(SizeOf("S!"), static_cast<int64_t>(sizeof(short)));
  EXPECT_EQ(SizeOf("n"), 2);
  EXPECT_EQ(SizeOf("v"), 2);
  EXPECT_EQ(SizeOf("i"), static_cast<int64_t>(sizeof(int)));
  EXPECT_EQ(SizeOf("l"), 4);  // always 4, unlike C's long
  EXPECT_EQ(SizeOf("l!"), static_cast<int64_t>(sizeof(long)));
  EXPECT_EQ(SizeOf("L_"), static_cast<int64_t>(sizeof(long)));
  EXPECT_EQ(SizeOf("N"), 4);
  EXPECT_EQ(SizeOf("V"), 4);
  EXPECT_EQ(SizeOf("f"), 4);
  EXPECT_EQ(SizeOf("e"), 4);
  EXPECT_EQ(SizeOf("g"), 4);
  EXPECT_EQ(SizeOf("q"), 8);
  EXPECT_EQ(SizeOf("Q!"), static_cast<int64_t>(sizeof(long long)));
  EXPECT_EQ(SizeOf("d"), 8);
  EXPECT_EQ(SizeOf("E"), 8);
  EXPECT_EQ(SizeOf("G"), 8);
  EXPECT_EQ(SizeOf("j"), static_cast<int64_t>(sizeof(intptr_t)));
  EXPECT_EQ(SizeOf(""), 0);
  EXPECT_EQ(SizeOf("|"), 0);
}

TEST(ItemFormat, CountsAlignmentAndWhitespace) {
  EXPECT_EQ(SizeOf("c3"), 3);
  EXPECT_EQ(SizeOf("iqc"), 13);
  EXPECT_EQ(SizeOf("|iqc"), 24);  // like sizeof(struct { int; long long; char; })
  EXPECT_EQ(SizeOf("|ci"), 8);
  EXPECT_EQ(SizeOf("|cc"), 2);
  EXPECT_EQ(SizeOf("f x2 d"), 14);
  ASSERT_OK_AND_ASSIGN(ItemDesc d, ParseItemFormat("|c s2 x q<"));
  ASSERT_EQ(d.components.size(), 3u);
  EXPECT_EQ(d.components[0].format, 'c');
  EXPECT_EQ(d.components[0].offset, 0);
  EXPECT_EQ(d.components[1].format, 's');
  EXPECT_EQ(d.components[1].offset, 2);
  EXPECT_EQ(d.components[1].repeat, 2);
  EXPECT_EQ(d.components[2].format, 'q');
  EXPECT_EQ(d.components[2].offset, 8);  // 2 + 4 = 6, the pad byte makes 7, aligned up to 8
  EXPECT_TRUE(d.components[2].little_endian);
  EXPECT_EQ(d.item_size, 16);
  ASSERT_OK_AND_ASSIGN(ItemDesc be, ParseItemFormat("l!>"));
  EXPECT_TRUE(be.components[0].native_size);
  EXPECT_FALSE(be.components[0].little_endian);
  ASSERT_OK_AND_ASSIGN(ItemDesc forced, ParseItemFormat("nVgE"));
  EXPECT_FALSE(forced.components[0].little_endian);
  EXPECT_TRUE(forced.components[1].little_endian);
  EXPECT_FALSE(forced.components[2].little_endian);
  EXPECT_TRUE(forced.components[3].little_endian);
}

TEST(ItemFormat, ErrorsNameTheOffsetAndWhy) {
  struct Case {
    const char* format;
    const char* message;
  };
  for (const Case& c :
       {Case{"b", "invalid type character 'b' at offset 0"},
        Case{"ic?", "invalid type character '?' at offset 2"},
        Case{"c!", "'!' is not allowed after 'c' (only after s S i I l L q Q j J) at offset 1"},
        Case{"f<", "'<' is not allowed after 'f'"},
        Case{"q<>", "a second byte-order modifier ('<' or '>') at offset 2"},
        Case{"i99999999999999999999", "count overflows at offset 1"},
        Case{"q9223372036854775807", "item size overflows at offset 0"},
        Case{"<i", "invalid type character '<' at offset 0"},
        Case{"i |", "invalid type character '|' at offset 2"},
        Case{"s< 2", "invalid type character '2' at offset 3"}}) {
    auto d = ParseItemFormat(c.format);
    ASSERT_FALSE(d.ok()) << c.format;
    EXPECT_THAT(d.status().message(), HasSubstr(c.message)) << c.format;
  }
}

TEST(ItemFormat, DecodesBothByteOrders) {
  const uint8_t bytes[] = {0x01, 0x02, 0x03, 0x04, 0xFF, 0xFE, 0xFD, 0xFC};
  ASSERT_OK_AND_ASSIGN(ItemDesc le, ParseItemFormat("l<"));
  ASSERT_OK_AND_ASSIGN(ItemDesc be, ParseItemFormat("l>"));
  EXPECT_EQ(std::get<int64_t>(std::get<ItemScalar>(DecodeItem(le, bytes))), 0x04030201);
  EXPECT_EQ(std::get<int64_t>(std::get<ItemScalar>(DecodeItem(be, bytes))), 0x01020304);
  ASSERT_OK_AND_ASSIGN(ItemDesc n, ParseItemFormat("n"));
  EXPECT_EQ(std::get<uint64_t>(std::get<ItemScalar>(DecodeItem(n, bytes + 4))), 0xFFFEu);
  ASSERT_OK_AND_ASSIGN(ItemDesc c, ParseItemFormat("c"));
  EXPECT_EQ(std::get<int64_t>(std::get<ItemScalar>(DecodeItem(c, bytes + 4))), -1);  // signed
  ASSERT_OK_AND_ASSIGN(ItemDesc s, ParseItemFormat("s>"));
  EXPECT_EQ(std::get<int64_t>(std::get<ItemScalar>(DecodeItem(s, bytes + 4))), -2);  // 0xFFFE

  uint8_t dbl[8];
  const double v = -1.5;
  std::memcpy(dbl, &v, 8);
  ASSERT_OK_AND_ASSIGN(ItemDesc e, ParseItemFormat("E"));
  EXPECT_EQ(std::get<double>(std::get<ItemScalar>(DecodeItem(e, dbl))), -1.5);
  uint8_t swapped[8];
  for (int i = 0; i < 8; ++i) swapped[i] = dbl[7 - i];
  ASSERT_OK_AND_ASSIGN(ItemDesc g, ParseItemFormat("G"));
  EXPECT_EQ(std::get<double>(std::get<ItemScalar>(DecodeItem(g, swapped))), -1.5);

  ASSERT_OK_AND_ASSIGN(ItemDesc multi, ParseItemFormat("C2 x v"));
  auto list = std::get<std::vector<ItemScalar>>(DecodeItem(multi, bytes));
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(std::get<uint64_t>(list[0]), 1u);
  EXPECT_EQ(std::get<uint64_t>(list[1]), 2u);
  EXPECT_EQ(std::get<uint64_t>(list[2]), 0xFF04u);  // little-endian 04 FF
  ASSERT_OK_AND_ASSIGN(ItemDesc pad, ParseItemFormat("x4"));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(DecodeItem(pad, bytes)));
}

// `{complex64}` and `{complex128}` are two floats each, real part first, aligned as their parts
// and in the byte order given; a complex member decodes to its two parts, even alone.
TEST(ItemFormat, BracedComplexNumbersAreTwoFloats) {
  ASSERT_OK_AND_ASSIGN(ItemDesc d, ParseItemFormat("|c {complex128}> {complex64}<"));
  EXPECT_EQ(d.item_size, 32);  // c, padding to 8, 16 bytes, 8 bytes
  ASSERT_EQ(d.components.size(), 3u);
  EXPECT_EQ(d.components[1].format, kComplexLetter);
  EXPECT_EQ(d.components[1].offset, 8);
  EXPECT_EQ(d.components[1].size, 16);
  EXPECT_EQ(d.components[2].offset, 24);
  EXPECT_EQ(d.components[2].size, 8);
  EXPECT_EQ(ItemKind(kComplexLetter), 'c');
  uint8_t item[32] = {};
  const double re = 1.5, im = -2.25;
  for (int i = 0; i < 8; ++i) {  // big-endian doubles
    item[8 + i] = reinterpret_cast<const uint8_t*>(&re)[7 - i];
    item[16 + i] = reinterpret_cast<const uint8_t*>(&im)[7 - i];
  }
  const float parts[2] = {0.5F, 4.0F};  // little-endian floats (the host's, on x86)
  std::memcpy(item + 24, parts, 8);
  const auto values = std::get<std::vector<ItemScalar>>(DecodeItem(d, item));
  ASSERT_EQ(values.size(), 5u);
  EXPECT_EQ(std::get<double>(values[1]), 1.5);
  EXPECT_EQ(std::get<double>(values[2]), -2.25);
  EXPECT_EQ(std::get<double>(values[3]), 0.5);
  EXPECT_EQ(std::get<double>(values[4]), 4.0);
  ASSERT_OK_AND_ASSIGN(ItemDesc alone, ParseItemFormat("{complex64}<"));
  EXPECT_EQ(std::get<std::vector<ItemScalar>>(DecodeItem(alone, item + 24)).size(), 2u);
}

// `{bool}` is a one-byte boolean member (kind 'b'), counted and aligned like `C`, decoded as its
// byte; `?` alone is not a pack letter.
TEST(ItemFormat, BracedBoolIsAOneByteBoolean) {
  ASSERT_OK_AND_ASSIGN(ItemDesc d, ParseItemFormat("|{bool}3 s"));
  EXPECT_EQ(d.item_size, 6);  // three bytes, one of padding, then s
  ASSERT_EQ(d.components.size(), 2u);
  EXPECT_EQ(d.components[0].format, kBoolLetter);
  EXPECT_EQ(d.components[0].size, 1);
  EXPECT_EQ(d.components[0].repeat, 3);
  EXPECT_EQ(ItemKind(kBoolLetter), 'b');
  const uint8_t item[6] = {1, 0, 1, 0, 7, 0};
  const auto values = std::get<std::vector<ItemScalar>>(DecodeItem(d, item));
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(std::get<uint64_t>(values[0]), 1u);
  EXPECT_EQ(std::get<uint64_t>(values[1]), 0u);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "invalid type character '?' at offset 0",
                     ParseItemFormat("?"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "'<' is not allowed after '}'",
                     ParseItemFormat("{bool}<"));
}

}  // namespace
}  // namespace ferry::memview
