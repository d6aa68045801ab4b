// Flat values read value by value (flat_values.hpp): which types are flat, and that equal values
// compare and hash alike whatever their slices, buffers and the bytes under their nulls, while a
// changed value, a moved null or a changed length tells them apart.
#include "ipc/flat_values.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "ferry/format/bits.hpp"
#include "ferry/format/schema.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using ipc::internal::FlatValues;
using ipc::internal::FlatValuesHash;
using ipc::internal::FlatValuesOf;
using ipc::internal::SameFlatValues;

TEST(FlatValues, FixedWidthBooleanBinaryAndStringTypesAreFlatAndTheRestAreNot) {
  struct Case {
    const char* format;
    bool binary, large;
    int64_t bits;
  };
  for (const Case& c :
       {Case{"i", false, false, 32}, Case{"g", false, false, 64}, Case{"b", false, false, 1},
        Case{"w:3", false, false, 24}, Case{"d:20,4", false, false, 128},
        Case{"tsu:", false, false, 64}, Case{"u", true, false, 0}, Case{"Z", true, true, 0}}) {
    SCOPED_TRACE(c.format);
    ASSERT_OK_AND_ASSIGN(UniqueSchema s, Field::Make(c.format, "v").Export());
    const std::optional<FlatValues> flat = FlatValuesOf(s.get());
    ASSERT_TRUE(flat.has_value());
    EXPECT_EQ(flat->binary, c.binary);
    EXPECT_EQ(flat->large, c.large);
    EXPECT_EQ(flat->bits, c.bits);
  }
  ASSERT_OK_AND_ASSIGN(UniqueSchema list,
                       Field::Make("+l", "v", {Field::Make("i", "item")}).Export());
  EXPECT_FALSE(FlatValuesOf(list.get()).has_value());
  ASSERT_OK_AND_ASSIGN(UniqueSchema view, Field::Make("vu", "v").Export());
  EXPECT_FALSE(FlatValuesOf(view.get()).has_value());
  ASSERT_OK_AND_ASSIGN(UniqueSchema null, Field::Make("n", "v").Export());
  EXPECT_FALSE(FlatValuesOf(null.get()).has_value());
}

struct FlatCase {
  const char* name;
  const char* format;
  const char* rows;     // JSON rows; the compared prefix is rows [1, 1 + length) of a slice
  const char* same;     // the same values as that prefix, unsliced, then a row more
  const char* changed;  // one valid value changed, or a null moved
  int64_t length;
};

class FlatValuesTest : public ::testing::TestWithParam<FlatCase> {};

// Writes `byte` over every byte of `a`'s value buffers under its null rows, as a producer may
// leave them (binary values: their offsets are left alone, their bytes have none).
void Scribble(const FlatValues& type, const ArrowArray* a, uint8_t byte) {
  const auto* validity = static_cast<const uint8_t*>(a->buffers[0]);
  if (validity == nullptr || type.binary) return;
  auto* values = static_cast<uint8_t*>(const_cast<void*>(a->buffers[1]));
  for (int64_t i = 0; i < a->length; ++i) {
    if (GetBit(validity, a->offset + i)) continue;
    if (type.bits == 1) {
      SetBit(values, a->offset + i, byte & 1);
    } else {
      std::memset(values + (a->offset + i) * (type.bits / 8), byte, type.bits / 8);
    }
  }
}

TEST_P(FlatValuesTest, EqualValuesCompareAndHashAlikeAndAChangeDoesNot) {
  const FlatCase& c = GetParam();
  const Field field = Field::Make(c.format, "v");
  ASSERT_OK_AND_ASSIGN(Array sliced, testing::SlicedArrayFromJson(field, c.rows, 1, c.length));
  ASSERT_OK_AND_ASSIGN(Array same, testing::ArrayFromJson(field, c.same));
  ASSERT_OK_AND_ASSIGN(Array changed, testing::ArrayFromJson(field, c.changed));
  const std::optional<FlatValues> type = FlatValuesOf(sliced.schema());
  ASSERT_TRUE(type.has_value());
  Scribble(*type, same.array(), 0xA5);
  EXPECT_TRUE(SameFlatValues(*type, sliced.array(), same.array(), c.length));
  EXPECT_TRUE(SameFlatValues(*type, same.array(), sliced.array(), c.length));
  EXPECT_EQ(FlatValuesHash(*type, sliced.array(), c.length),
            FlatValuesHash(*type, same.array(), c.length));
  EXPECT_FALSE(SameFlatValues(*type, sliced.array(), changed.array(), c.length));
  EXPECT_NE(FlatValuesHash(*type, sliced.array(), c.length),
            FlatValuesHash(*type, changed.array(), c.length));
  // The row after the prefix differs (`same` has one more), and a longer prefix sees it.
  EXPECT_NE(FlatValuesHash(*type, sliced.array(), c.length),
            FlatValuesHash(*type, same.array(), c.length + 1));
  EXPECT_TRUE(SameFlatValues(*type, sliced.array(), sliced.array(), 0));
}

INSTANTIATE_TEST_SUITE_P(
    Types, FlatValuesTest,
    ::testing::Values(
        FlatCase{"Int32", "i", "[7, 1, null, 3, 9]", "[1, null, 3, 4]", "[1, null, 4, 4]", 3},
        FlatCase{"Int64NoNulls", "l", "[7, 1, 2, 3]", "[1, 2, 3, 0]", "[1, 2, 4, 0]", 3},
        FlatCase{"NullMoved", "i", "[7, 1, null, 3]", "[1, null, 3, 0]", "[null, 1, 3, 0]", 3},
        FlatCase{"Float64", "g", "[0, -0.0, 1.5, null]", "[-0.0, 1.5, null, 2]",
                 "[0.0, 1.5, null, 2]", 3},
        FlatCase{"Bool", "b", "[true, false, null, true, true, false, true, false, true, true]",
                 "[false, null, true, true, false, true, false, true, true, false]",
                 "[false, null, true, true, false, true, false, false, true, false]", 9},
        FlatCase{"BoolNoNulls", "b", "[true, false, true]", "[false, true, false]",
                 "[true, true, false]", 2},
        FlatCase{"String", "u", R"(["x", "ab", null, "", "cde", "z"])",
                 R"(["ab", null, "", "cde", "q"])", R"(["ab", null, "", "cdf", "q"])", 4},
        FlatCase{"StringNoNulls", "u", R"(["x", "ab", "", "cde"])", R"(["ab", "", "cde", "q"])",
                 R"(["a", "b", "cde", "q"])", 3},
        FlatCase{"LargeBinary", "Z", R"(["78", "6162", null, "63"])", R"(["6162", null, "63", ""])",
                 R"(["6162", "", "63", ""])", 3},
        FlatCase{"FixedSizeBinary", "w:2", R"(["0000", "6162", null, "6364"])",
                 R"(["6162", null, "6364", "0000"])", R"(["6162", null, "6365", "0000"])", 3}),
    [](const ::testing::TestParamInfo<FlatCase>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace ferry
