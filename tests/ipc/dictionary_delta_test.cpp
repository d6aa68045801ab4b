// Joining a dictionary and its delta (dictionary_delta.hpp): the joined rows, worked out by hand,
// for every flat value type and for nested ones, from sliced parts with and without nulls; and
// the refusals.
#include "ipc/dictionary_delta.hpp"

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "ferry/format/schema.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

struct JoinCase {
  const char* name;
  const char* format;
  const char* dictionary;       // JSON rows, of which rows [1, end) are joined (a sliced parent)
  const char* delta;            // JSON rows, of which rows [2, end) are joined
  const char* joined;           // what the join must hold
  int64_t nulls;                // its null count
  const char* child = nullptr;  // a list's item format
};

class JoinDeltaTest : public ::testing::TestWithParam<JoinCase> {};

int64_t Rows(const char* json) { return static_cast<int64_t>(nlohmann::json::parse(json).size()); }

TEST_P(JoinDeltaTest, HoldsTheRowsOfBothInOrder) {
  const JoinCase& c = GetParam();
  const Field field = c.child == nullptr
                          ? Field::Make(c.format, "v")
                          : Field::Make(c.format, "v", {Field::Make(c.child, "item")});
  ASSERT_OK_AND_ASSIGN(
      Array a, testing::SlicedArrayFromJson(field, c.dictionary, 1, Rows(c.dictionary) - 1));
  ASSERT_OK_AND_ASSIGN(Array b, testing::SlicedArrayFromJson(field, c.delta, 2, Rows(c.delta) - 2));
  ASSERT_OK_AND_ASSIGN(UniqueArray joined,
                       ipc::internal::JoinDelta(a.schema(), a.array(), b.array()));
  EXPECT_EQ(joined->offset, 0);
  EXPECT_EQ(joined->null_count, c.nulls);
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(a.schema()));
  ASSERT_OK(view.SetArray(joined.get()));
  ASSERT_OK(view.Validate(ValidationLevel::kFull));
  EXPECT_EQ(nlohmann::json::parse(testing::ToJson(view)), nlohmann::json::parse(c.joined));
  // The parts are read, not kept: the joined array outlives them.
  a = Array(std::move(b));
  EXPECT_EQ(nlohmann::json::parse(testing::ToJson(view)), nlohmann::json::parse(c.joined));
}

// Each dictionary drops its first row and each delta its first two (the slices); nine booleans
// put the delta's bits at an offset that is no whole byte.
INSTANTIATE_TEST_SUITE_P(
    Types, JoinDeltaTest,
    ::testing::Values(
        JoinCase{"Int32", "i", "[9, 1, null, 3]", "[8, 8, 4, null]", "[1, null, 3, 4, null]", 2},
        JoinCase{"Int64NoNulls", "l", "[0, -1, 9007199254740993]", "[5, 5, 7]",
                 "[-1, 9007199254740993, 7]", 0},
        JoinCase{"Float64", "g", "[0, 0.1, -0.0, 1e308]", "[1, 1, 2.5e-310]",
                 "[0.1, -0.0, 1e308, 2.5e-310]", 0},
        JoinCase{"Bool", "b", "[false, true, false, true, true, false, true, false, true, true]",
                 "[true, true, false, null, true]",
                 "[true, false, true, true, false, true, false, true, true, false, null, true]", 1},
        JoinCase{"String", "u", R"(["x", "a", null, "ccc"])", R"(["y", "z", "", "dd", null])",
                 R"(["a", null, "ccc", "", "dd", null])", 2},
        JoinCase{"LargeBinary", "Z", R"(["00", "ff00", "0a0b"])", R"(["11", "22", "33"])",
                 R"(["ff00", "0a0b", "33"])", 0},
        JoinCase{"FixedSizeBinary", "w:2", R"(["0000", "0102", null])",
                 R"(["ffff", "eeee", "0304"])", R"(["0102", null, "0304"])", 1},
        JoinCase{"Decimal128", "d:10,2", R"(["1.00", "-3.25", "7.50"])",
                 R"(["0.00", "0.00", "12.34"])", R"(["-3.25", "7.50", "12.34"])", 0},
        JoinCase{"EmptyDelta", "u", R"(["x", "a"])", R"(["y", "z"])", R"(["a"])", 0},
        JoinCase{"EmptyDictionary", "i", "[1]", "[2, 3, null, 4]", "[null, 4]", 1},
        // Not flat: joined through the JSON rendering, as the join says.
        JoinCase{"ListOfInt32", "+l", "[[0], [1, 2], null]", "[[], [], [3], []]",
                 "[[1, 2], null, [3], []]", 1, "i"},
        JoinCase{"StringView", "vu", R"(["x", "a long string, past twelve bytes", "b"])",
                 R"(["y", "z", "another long string value"])",
                 R"(["a long string, past twelve bytes", "b", "another long string value"])", 0}),
    [](const ::testing::TestParamInfo<JoinCase>& p) { return std::string(p.param.name); });

// A string array of `length` rows from `offset` over `buffers`, with no nulls and no owner.
ArrowArray Part(int64_t length, int64_t offset, const void** buffers) {
  ArrowArray a{};
  a.length = length;
  a.offset = offset;
  a.n_buffers = 3;
  a.buffers = buffers;
  return a;
}

// A string dictionary whose bytes would pass 2 GiB with its delta cannot keep 32-bit offsets:
// refused, naming the sizes, before any byte is copied (the parts' bytes are never read here).
TEST(JoinDelta, RefusesStringsPastThirtyTwoBitOffsets) {
  const Field field = Field::Make("u", "v");
  ASSERT_OK_AND_ASSIGN(Array shape, testing::ArrayFromJson(field, R"(["a"])"));
  const int32_t big[2] = {0, std::numeric_limits<int32_t>::max() - 10};
  const int32_t small[2] = {0, 11};
  const uint8_t none[1] = {0};
  const void* big_buffers[3] = {nullptr, big, none};
  const void* small_buffers[3] = {nullptr, small, none};
  const ArrowArray a = Part(1, 0, big_buffers);
  const ArrowArray b = Part(1, 0, small_buffers);
  ASSERT_RAISES_WITH(StatusCode::kOutOfRange, "2147483648 bytes of values, past the 2147483647",
                     ipc::internal::JoinDelta(shape.schema(), &a, &b));
}

TEST(JoinDelta, RefusesOffsetsThatRunBackwards) {
  const Field field = Field::Make("u", "v");
  ASSERT_OK_AND_ASSIGN(Array shape, testing::ArrayFromJson(field, R"(["a"])"));
  const int32_t backwards[3] = {0, 5, 2};
  const int32_t fine[2] = {0, 1};
  const uint8_t bytes[8] = {};
  const void* a_buffers[3] = {nullptr, backwards, bytes};
  const void* b_buffers[3] = {nullptr, fine, bytes};
  const ArrowArray a = Part(1, 1, a_buffers);
  const ArrowArray b = Part(1, 0, b_buffers);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "the dictionary's last offset 2 is below its first 5",
                     ipc::internal::JoinDelta(shape.schema(), &a, &b));
}

}  // namespace
}  // namespace ferry
