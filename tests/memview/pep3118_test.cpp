// PEP 3118 and NumPy typestr bridges: sizes and offsets agree with Python's struct rules.
#include "ferry/memview/pep3118.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/test_util.hpp"

namespace ferry::memview {
namespace {

using ::testing::HasSubstr;

ItemDesc FromPep3118(const char* format) {
  auto pack = PackFormatFromPep3118(format);
  EXPECT_TRUE(pack.ok()) << format << ": " << pack.status().message();
  auto desc = ParseItemFormat(pack.ok() ? *pack : "");
  EXPECT_TRUE(desc.ok()) << desc.status().message();
  return desc.ok() ? *desc : ItemDesc{};
}

TEST(Pep3118, MapsBySizeAndOrder) {
  EXPECT_EQ(*PackFormatFromPep3118("<i"), "l<");
  EXPECT_EQ(*PackFormatFromPep3118(">d"), "G");
  EXPECT_EQ(*PackFormatFromPep3118("<f"), "e");  // Ruby's 'e' is a little-endian float
  EXPECT_EQ(*PackFormatFromPep3118("=l"), "l");  // standard size: 4 bytes
  EXPECT_EQ(FromPep3118("@l").item_size, static_cast<int64_t>(sizeof(long)));
  EXPECT_EQ(*PackFormatFromPep3118("!H"), "S>");
  EXPECT_EQ(*PackFormatFromPep3118("B"), "C");
  EXPECT_EQ(*PackFormatFromPep3118("b"), "c");
  EXPECT_EQ(*PackFormatFromPep3118("?"), "{bool}");  // ferry's name: Ruby's pack has none
  EXPECT_EQ(*PackFormatFromPep3118("3?"), "{bool}3");
  ASSERT_OK_AND_ASSIGN(ItemDesc booleans, ParseItemFormat("{bool}3"));
  EXPECT_EQ(*Pep3118FromItemDesc(booleans), "<3?");
  EXPECT_EQ(*PackFormatFromPep3118("Zf"), "{complex64}");
  EXPECT_EQ(*PackFormatFromPep3118("<Zd"), "{complex128}<");
  EXPECT_EQ(*PackFormatFromPep3118(">2Zf"), "{complex64}>2");
  EXPECT_EQ(FromPep3118("@cZd").item_size, 24);  // a complex double aligns to 8, as in C
  ASSERT_OK_AND_ASSIGN(ItemDesc complex, ParseItemFormat("{complex64}>"));
  EXPECT_EQ(*Pep3118FromItemDesc(complex), ">Zf");
  EXPECT_EQ(*PackFormatFromPep3118("<4h"), "s<4");
  EXPECT_EQ(*PackFormatFromPep3118("10s"), "C10");
}

TEST(Pep3118, NativeAlignmentWithoutTailPadding) {
  ItemDesc d = FromPep3118("@iqb");  // Python: struct.calcsize("@iqb") == 17
  EXPECT_EQ(d.item_size, 17);
  ASSERT_EQ(d.components.size(), 3u);
  EXPECT_EQ(d.components[1].offset, 8);
  EXPECT_EQ(d.components[2].offset, 16);
  EXPECT_EQ(FromPep3118("<iqb").item_size, 13);  // standard: no alignment
  EXPECT_EQ(FromPep3118("^iqb").item_size, 13);
}

TEST(Pep3118, StructsNamesAndPadding) {
  ItemDesc d = FromPep3118("T{<h:x: 2x >d:y:}");
  EXPECT_EQ(d.item_size, 12);
  ASSERT_EQ(d.components.size(), 2u);
  EXPECT_EQ(d.components[1].offset, 4);
  EXPECT_FALSE(d.components[1].little_endian);
}

TEST(Pep3118, UnsupportedFormsAreClearErrors) {
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "a complex number ('Z') needs 'f' or 'd' after it (long double has no "
                     "pack-template type) at offset 0",
                     PackFormatFromPep3118("Zg"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "sub-array shapes",
                     PackFormatFromPep3118("(2,2)i"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unterminated 'T{'",
                     PackFormatFromPep3118("T{i"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unmatched '}' at offset 1",
                     PackFormatFromPep3118("i}"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unknown format character 'y'",
                     PackFormatFromPep3118("y"));
}

TEST(Pep3118, FromItemDescRoundTripsLayout) {
  for (const char* pack : {"|iqc", "l>2 x3 E", "C", "Q<", "s v N"}) {
    ASSERT_OK_AND_ASSIGN(ItemDesc desc, ParseItemFormat(pack));
    ASSERT_OK_AND_ASSIGN(std::string pep, Pep3118FromItemDesc(desc));
    ItemDesc back = FromPep3118(pep.c_str());
    EXPECT_EQ(back.item_size, desc.item_size) << pack << " -> " << pep;
    ASSERT_EQ(back.components.size(), desc.components.size()) << pep;
    for (size_t i = 0; i < desc.components.size(); ++i) {
      EXPECT_EQ(back.components[i].offset, desc.components[i].offset) << pep;
      EXPECT_EQ(back.components[i].size * back.components[i].repeat,
                desc.components[i].size * desc.components[i].repeat)
          << pep;
      if (desc.components[i].size > 1) {
        EXPECT_EQ(back.components[i].little_endian, desc.components[i].little_endian) << pep;
      }
    }
  }
}

TEST(Pep3118, UnsignedLettersStayUnsigned) {
  for (const char* pack : {"I", "J", "n", "V", "L!"}) {
    ASSERT_OK_AND_ASSIGN(ItemDesc desc, ParseItemFormat(pack));
    ASSERT_OK_AND_ASSIGN(std::string pep, Pep3118FromItemDesc(desc));
    EXPECT_TRUE(pep.find_first_of("BHIQ") != std::string::npos) << pack << " -> " << pep;
  }
  EXPECT_EQ(ItemKind('I'), 'u');
  EXPECT_EQ(ItemKind('j'), 'i');
  EXPECT_EQ(ItemKind('G'), 'f');
  EXPECT_EQ(ItemKind('x'), 0);
}

TEST(NumpyTypestr, BothDirections) {
  auto typestr = [](const char* pack) {
    auto desc = ParseItemFormat(pack);
    EXPECT_TRUE(desc.ok());
    auto t = NumpyTypestrFromItemDesc(*desc);
    return t.ok() ? *t : t.status().message();
  };
  EXPECT_EQ(typestr("l<"), "<i4");
  EXPECT_EQ(typestr("Q>"), ">u8");
  EXPECT_EQ(typestr("G"), ">f8");
  EXPECT_EQ(typestr("c"), "|i1");
  EXPECT_EQ(typestr("C16"), "|V16");
  EXPECT_THAT(typestr("ll"), HasSubstr("one scalar type"));
  EXPECT_EQ(*PackFormatFromNumpyTypestr("<i4"), "l<");
  EXPECT_EQ(*PackFormatFromNumpyTypestr(">f8"), "G");
  EXPECT_EQ(*PackFormatFromNumpyTypestr("|u1"), "C");
  EXPECT_EQ(*PackFormatFromNumpyTypestr("|b1"), "{bool}");
  EXPECT_EQ(typestr("{bool}"), "|b1");
  EXPECT_EQ(*PackFormatFromNumpyTypestr("|V12"), "C12");
  EXPECT_EQ(*PackFormatFromNumpyTypestr("<c8"), "{complex64}<");
  EXPECT_EQ(*PackFormatFromNumpyTypestr(">c16"), "{complex128}>");
  EXPECT_EQ(typestr("{complex128}<"), "<c16");
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "kind 'M'", PackFormatFromNumpyTypestr("<M8"));
  EXPECT_EQ(*PackFormatFromNumpyTypestr("<f2"), "{float16}<");
  EXPECT_EQ(*PackFormatFromNumpyTypestr(">f2"), "{float16}>");
  EXPECT_EQ(typestr("{float16}<"), "<f2");
  EXPECT_EQ(typestr("{float16}>"), ">f2");
  EXPECT_THAT(typestr("{bfloat16}"), HasSubstr("no code for bfloat16"));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "of 16 bytes", PackFormatFromNumpyTypestr("<f16"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "bad byte order",
                     PackFormatFromNumpyTypestr("?i4"));
}

}  // namespace
}  // namespace ferry::memview
