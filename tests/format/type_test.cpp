// Format strings: every valid form parses and round-trips; every error names its position.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ferry/format/schema.hpp"
#include "ferry/format/schema_view.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using ::testing::HasSubstr;

struct FormatCase {
  const char* format;
  TypeId type;
};

class FormatRoundTrip : public ::testing::TestWithParam<FormatCase> {};

TEST_P(FormatRoundTrip, ParsesAndPrintsBack) {
  ASSERT_OK_AND_ASSIGN(FormatInfo info, ParseFormat(GetParam().format));
  EXPECT_EQ(info.type, GetParam().type) << TypeIdName(info.type);
  ASSERT_OK_AND_ASSIGN(std::string printed, FormatToString(info));
  EXPECT_EQ(printed, GetParam().format);
}

INSTANTIATE_TEST_SUITE_P(
    Every, FormatRoundTrip,
    ::testing::Values(
        FormatCase{"n", TypeId::kNull}, FormatCase{"b", TypeId::kBool},
        FormatCase{"c", TypeId::kInt8}, FormatCase{"C", TypeId::kUInt8},
        FormatCase{"s", TypeId::kInt16}, FormatCase{"S", TypeId::kUInt16},
        FormatCase{"i", TypeId::kInt32}, FormatCase{"I", TypeId::kUInt32},
        FormatCase{"l", TypeId::kInt64}, FormatCase{"L", TypeId::kUInt64},
        FormatCase{"e", TypeId::kHalfFloat}, FormatCase{"f", TypeId::kFloat},
        FormatCase{"g", TypeId::kDouble}, FormatCase{"d:9,2,32", TypeId::kDecimal32},
        FormatCase{"d:18,-3,64", TypeId::kDecimal64}, FormatCase{"d:38,10", TypeId::kDecimal128},
        FormatCase{"d:76,5,256", TypeId::kDecimal256}, FormatCase{"w:16", TypeId::kFixedSizeBinary},
        FormatCase{"z", TypeId::kBinary}, FormatCase{"Z", TypeId::kLargeBinary},
        FormatCase{"vz", TypeId::kBinaryView}, FormatCase{"u", TypeId::kString},
        FormatCase{"U", TypeId::kLargeString}, FormatCase{"vu", TypeId::kStringView},
        FormatCase{"tdD", TypeId::kDate32}, FormatCase{"tdm", TypeId::kDate64},
        FormatCase{"tts", TypeId::kTime32}, FormatCase{"ttm", TypeId::kTime32},
        FormatCase{"ttu", TypeId::kTime64}, FormatCase{"ttn", TypeId::kTime64},
        FormatCase{"tss:", TypeId::kTimestamp}, FormatCase{"tsm:UTC", TypeId::kTimestamp},
        FormatCase{"tsu:America/New_York", TypeId::kTimestamp},
        FormatCase{"tsn:+07:30", TypeId::kTimestamp}, FormatCase{"tDs", TypeId::kDuration},
        FormatCase{"tDm", TypeId::kDuration}, FormatCase{"tDu", TypeId::kDuration},
        FormatCase{"tDn", TypeId::kDuration}, FormatCase{"tiM", TypeId::kIntervalMonths},
        FormatCase{"tiD", TypeId::kIntervalDayTime},
        FormatCase{"tin", TypeId::kIntervalMonthDayNano}, FormatCase{"+l", TypeId::kList},
        FormatCase{"+L", TypeId::kLargeList}, FormatCase{"+vl", TypeId::kListView},
        FormatCase{"+vL", TypeId::kLargeListView}, FormatCase{"+w:4", TypeId::kFixedSizeList},
        FormatCase{"+s", TypeId::kStruct}, FormatCase{"+m", TypeId::kMap},
        FormatCase{"+ud:0,5,127", TypeId::kDenseUnion}, FormatCase{"+us:", TypeId::kSparseUnion},
        FormatCase{"+r", TypeId::kRunEndEncoded}));

TEST(ParseFormat, FillsParameters) {
  ASSERT_OK_AND_ASSIGN(FormatInfo dec, ParseFormat("d:38,-4,128"));
  EXPECT_EQ(dec.decimal_precision, 38);
  EXPECT_EQ(dec.decimal_scale, -4);
  EXPECT_EQ(dec.decimal_bitwidth, 128);
  ASSERT_OK_AND_ASSIGN(FormatInfo ts, ParseFormat("tsu:Asia/Tokyo"));
  EXPECT_EQ(ts.time_unit, TimeUnit::kMicro);
  EXPECT_EQ(ts.timezone, "Asia/Tokyo");
  ASSERT_OK_AND_ASSIGN(FormatInfo u, ParseFormat("+us:4,2,9"));
  EXPECT_EQ(u.union_type_ids, (std::vector<int8_t>{4, 2, 9}));
  ASSERT_OK_AND_ASSIGN(FormatInfo fsl, ParseFormat("+w:0"));
  EXPECT_EQ(fsl.fixed_size, 0);
}

struct BadFormat {
  const char* format;
  const char* message;
};

class FormatErrors : public ::testing::TestWithParam<BadFormat> {};

TEST_P(FormatErrors, NameCharacterPositionAndReason) {
  auto r = ParseFormat(GetParam().format);
  ASSERT_FALSE(r.ok()) << GetParam().format;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(GetParam().message)) << r.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Every, FormatErrors,
    ::testing::Values(
        BadFormat{"", "unexpected end at position 0: the format string is empty"},
        BadFormat{"q", "unexpected 'q' at position 0: not a type letter"},
        BadFormat{"tsz:", "unexpected 'z' at position 2: expected a time unit (s, m, u, n)"},
        BadFormat{"tsu", "unexpected end at position 3: expected ':'"},
        BadFormat{"d:38", "unexpected end at position 4: expected ',' and a scale"},
        BadFormat{"d38,2", "unexpected '3' at position 1: expected ':'"},
        BadFormat{"d:39,2", "precision 39 exceeds 38 for decimal128"},
        BadFormat{"d:10,2,32", "precision 10 exceeds 9 for decimal32"},
        BadFormat{"d:5,2,48", "at position 6: decimal bit width must be 32, 64, 128 or 256"},
        BadFormat{"d:0,0", "decimal precision 0 is outside [1, 76]"},
        BadFormat{"w:0", "byte width 0 is outside"},
        BadFormat{"w:abc", "unexpected 'a' at position 2: expected byte width"},
        BadFormat{"w:99999999999999999999", "does not fit in 64 bits"},
        BadFormat{"+w:-1", "list size -1 is outside"},
        BadFormat{"+ud:1,128", "union type id 128 is outside [0, 127]"},
        BadFormat{"+ud:1,1", "union type id 1 repeats"},
        BadFormat{"+ud:1,", "unexpected end at position 6: expected union type id"},
        BadFormat{"+x", "unexpected 'x' at position 1: expected a nested kind"},
        BadFormat{"+vx", "unexpected 'x' at position 2"},
        BadFormat{"ii", "unexpected 'i' at position 1: trailing characters"},
        BadFormat{"tdX", "unexpected 'X' at position 2"},
        BadFormat{"tiQ", "unexpected 'Q' at position 2: expected an interval unit"},
        BadFormat{"vq", "unexpected 'q' at position 1"}));

TEST(LayoutOf, MatchesTheColumnarSpec) {
  Layout s = LayoutOf(TypeId::kString);
  EXPECT_EQ(s.n_fixed_buffers, 3);
  EXPECT_EQ(s.buffer_type[1], BufferType::kDataOffset);
  EXPECT_EQ(s.element_size_bits[1], 32);
  EXPECT_EQ(LayoutOf(TypeId::kLargeBinary).element_size_bits[1], 64);
  EXPECT_EQ(LayoutOf(TypeId::kSparseUnion).n_fixed_buffers, 1);
  EXPECT_EQ(LayoutOf(TypeId::kSparseUnion).buffer_type[0], BufferType::kTypeId);
  EXPECT_EQ(LayoutOf(TypeId::kDenseUnion).n_fixed_buffers, 2);
  EXPECT_EQ(LayoutOf(TypeId::kRunEndEncoded).n_fixed_buffers, 0);
  EXPECT_EQ(LayoutOf(TypeId::kRunEndEncoded).n_children, 2);
  EXPECT_EQ(LayoutOf(TypeId::kNull).n_fixed_buffers, 0);
  EXPECT_EQ(LayoutOf(TypeId::kBool).element_size_bits[1], 1);
  EXPECT_EQ(LayoutOf(TypeId::kDecimal256).element_size_bits[1], 256);
  EXPECT_EQ(LayoutOf(TypeId::kIntervalMonthDayNano).element_size_bits[1], 128);
  EXPECT_EQ(LayoutOf(TypeId::kLargeListView).buffer_type[2], BufferType::kListSize);
  EXPECT_EQ(LayoutOf(TypeId::kStringView).element_size_bits[1], 128);
  EXPECT_EQ(LayoutOf(TypeId::kFixedSizeList).n_fixed_buffers, 1);
}

TEST(SchemaView, DictionaryExtensionAndFlags) {
  Field f = Field::Dictionary("d", "s", Field::Make("u", "values"), /*ordered=*/true);
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, f.Export());
  ASSERT_OK_AND_ASSIGN(SchemaView v, SchemaView::Make(schema.get()));
  EXPECT_EQ(v.type, TypeId::kDictionary);
  EXPECT_EQ(v.storage_type, TypeId::kInt16);
  EXPECT_TRUE(v.dictionary_ordered);
  EXPECT_TRUE(v.nullable);

  Field e = Field::Extension("e", "arrow.uuid", "meta", Field::Make("w:16", "e"));
  ASSERT_OK_AND_ASSIGN(UniqueSchema ext, e.Export());
  ASSERT_OK_AND_ASSIGN(SchemaView ev, SchemaView::Make(ext.get()));
  EXPECT_EQ(ev.type, TypeId::kExtension);
  EXPECT_EQ(ev.storage_type, TypeId::kFixedSizeBinary);
  EXPECT_EQ(ev.extension_name, "arrow.uuid");
  EXPECT_EQ(ev.extension_metadata, "meta");
  EXPECT_EQ(ev.layout.element_size_bits[1], 128);

  Field m = Field::Make(
      "+m", "m",
      {Field::Make("+s", "entries", {Field::Make("u", "key"), Field::Make("i", "value")})});
  m.flags |= ARROW_FLAG_MAP_KEYS_SORTED;
  ASSERT_OK_AND_ASSIGN(UniqueSchema map, m.Export());
  ASSERT_OK_AND_ASSIGN(SchemaView mv, SchemaView::Make(map.get()));
  EXPECT_TRUE(mv.map_keys_sorted);
}

TEST(SchemaView, RejectsBadTrees) {
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "schema is NULL", SchemaView::Make(nullptr));
  ArrowSchema released{};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "schema is released",
                     SchemaView::Make(&released));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs 1 child(ren), got 0",
                     Field::Make("+l", "a").Export());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "field \"a\": type int32 needs 0 child(ren), got 1",
                     Field::Make("i", "a", {Field::Make("i", "b")}).Export());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "a map's child must be a struct of two fields",
                     Field::Make("+m", "m", {Field::Make("i", "x")}).Export());
  ASSERT_RAISES_WITH(
      StatusCode::kInvalidArgument, "run ends must be int16, int32 or int64",
      Field::Make("+r", "r", {Field::Make("u", "e"), Field::Make("u", "v")}).Export());
  ASSERT_RAISES_WITH(
      StatusCode::kInvalidArgument, "union lists 1 type ids for 2 children",
      Field::Make("+us:1", "u", {Field::Make("i", "a"), Field::Make("i", "b")}).Export());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "dictionary indices must be an integer type",
                     Field::Dictionary("d", "u", Field::Make("u", "v")).Export());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "field \"t\": format \"tsq:\"",
                     Field::Make("tsq:", "t").Export());
  // Found by the ipc_file fuzzer: the width in bits must fit the layout's int32.
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "fixed-size binary width 1895825424 exceeds the largest supported",
                     Field::Make("w:1895825424", "w").Export());
  ASSERT_OK(Field::Make("w:268435455", "w").Export().status());
}

TEST(SchemaToString, ReadableNestedTypes) {
  Field f = Field::Make(
      "+s", "",
      {Field::Make("tsu:UTC", "t"), Field::Make("d:10,2", "d"),
       Field::Make("+l", "l",
                   {Field::Make("+s", "item", {Field::Make("i", "a"), Field::Make("u", "b")})}),
       Field::Dictionary("dict", "c", Field::Make("u", "values"), true),
       Field::Make("+ud:3,4", "u", {Field::Make("i", "x"), Field::Make("vu", "y")}),
       Field::Make("+r", "r", {Field::Make("i", "run_ends"), Field::Make("g", "values")}),
       Field::Extension("ext", "arrow.uuid", "", Field::Make("w:16", "ext"))});
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, f.Export());
  ASSERT_OK_AND_ASSIGN(std::string text, SchemaToString(schema.get()));
  EXPECT_EQ(text,
            "struct<t: timestamp[us, tz=UTC], d: decimal128(10, 2), "
            "l: list<item: struct<a: int32, b: string>>, "
            "dict: dictionary<values=string, indices=int8, ordered>, "
            "u: dense_union<3: x: int32, 4: y: string_view>, "
            "r: run_end_encoded<run_ends: int32, values: double>, "
            "ext: extension<arrow.uuid: fixed_size_binary[16]>>");
}

TEST(ColumnIndices, NamesAndIndicesBecomeSortedIndices) {
  Field f = Field::Make(
      "+s", "",
      {Field::Make("l", "x"), Field::Make("u", "s"), Field::Make("g", "7"), Field::Make("i", "x")});
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, f.Export());
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> got, ColumnIndices(schema.get(), {"s", "x", "1"}));
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1}));  // sorted, each once; "x" is the first x
  // A column named like a number is that column; other numbers are indices.
  ASSERT_OK_AND_ASSIGN(got, ColumnIndices(schema.get(), {"7", "3"}));
  EXPECT_EQ(got, (std::vector<int32_t>{2, 3}));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "no column named \"z\" (the schema has: x, s, 7, x)",
                     ColumnIndices(schema.get(), {"z"}));
  ASSERT_RAISES_WITH(StatusCode::kOutOfRange, "column 4 is out of range (the schema has 4 columns)",
                     ColumnIndices(schema.get(), {"4"}));
}

}  // namespace
}  // namespace ferry
