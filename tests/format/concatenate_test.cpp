// Concatenate (ferry/format/concatenate.hpp): every type case, from sliced parts with and without
// nulls, against the generated values; bit-exact floats; shared and joined dictionaries; the
// refusals, each naming its part.
#include "ferry/format/concatenate.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "ferry/format/array_view.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "support/test_util.hpp"
#include "support/type_cases.hpp"

namespace ferry {
namespace {

using testing::Json;

Json RowsOf(const Json& all, size_t from, size_t to) {
  Json out = Json::array();
  for (size_t i = from; i < to; ++i) out.push_back(all[i]);
  return out;
}

struct JoinParam {
  size_t type_index;
  bool nulls;
};

void PrintTo(const JoinParam& p, std::ostream* os) {
  *os << testing::TypeCases()[p.type_index].name << (p.nulls ? " with nulls" : "");
}

class ConcatenateTypes : public ::testing::TestWithParam<JoinParam> {};

// Three parts: rows [1, 13) of one array, an empty one, and rows [17, 34) of a second (each
// sliced, so each part's offset is not 0). The join holds exactly those rows, validates in full
// and outlives its parts.
TEST_P(ConcatenateTypes, HoldsEachPartsRowsInOrder) {
  const JoinParam p = GetParam();
  const testing::TypeCase& tc = testing::TypeCases()[p.type_index];
  auto [values, rendered] = testing::GenerateValues(tc, 31 + p.type_index, 36, p.nulls);
  ASSERT_OK_AND_ASSIGN(Array a,
                       testing::SlicedArrayFromJson(tc.field, RowsOf(values, 0, 14).dump(), 1, 12));
  ASSERT_OK_AND_ASSIGN(Array empty, testing::ArrayFromJson(tc.field, "[]"));
  ASSERT_OK_AND_ASSIGN(
      Array b, testing::SlicedArrayFromJson(tc.field, RowsOf(values, 14, 36).dump(), 3, 17));
  // The join is read through a schema of its own: the parts' go with them.
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, tc.field.Export());
  const ArrowArray* parts[3] = {a.array(), empty.array(), b.array()};
  ASSERT_OK_AND_ASSIGN(UniqueArray joined, Concatenate(schema.get(), parts));
  EXPECT_EQ(joined->length, 29);
  EXPECT_EQ(joined->offset, 0);
  Json expected = RowsOf(rendered, 1, 13);
  for (const Json& row : RowsOf(rendered, 17, 34)) expected.push_back(row);
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(joined.get()));
  ASSERT_OK(view.Validate(ValidationLevel::kFull));
  EXPECT_EQ(Json::parse(testing::ToJson(view)), expected);
  {
    // The parts go; the join keeps its own bytes.
    const Array gone[3] = {std::move(a), std::move(empty), std::move(b)};
  }
  EXPECT_EQ(Json::parse(testing::ToJson(view)), expected);
}

// No parts: an empty array of the type, valid in full.
TEST_P(ConcatenateTypes, OfNoPartsIsEmpty) {
  const testing::TypeCase& tc = testing::TypeCases()[GetParam().type_index];
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, tc.field.Export());
  ASSERT_OK_AND_ASSIGN(UniqueArray joined, Concatenate(schema.get(), {}));
  EXPECT_EQ(joined->length, 0);
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(joined.get()));
  ASSERT_OK(view.Validate(ValidationLevel::kFull));
}

std::vector<JoinParam> JoinParams() {
  std::vector<JoinParam> out;
  for (size_t i = 0; i < testing::TypeCases().size(); ++i) {
    out.push_back({i, false});
    out.push_back({i, true});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryType, ConcatenateTypes, ::testing::ValuesIn(JoinParams()),
                         [](const ::testing::TestParamInfo<JoinParam>& p) {
                           return testing::TypeCases()[p.param.type_index].name +
                                  (p.param.nulls ? "_nulls" : "");
                         });

// Doubles keep every bit: NaN payloads and signs, negative zero, subnormals, inside a list.
TEST(Concatenate, KeepsEveryBitOfAFloat) {
  const uint64_t bits[6] = {0x7ff8000000000001, 0xfff8000000000000, 0x7ff0000000000abc,
                            0x8000000000000000, 0x0000000000000001, 0x3fb999999999999a};
  double values[6];
  std::memcpy(values, bits, sizeof(bits));
  const int32_t offsets_a[3] = {0, 2, 3};
  const int32_t offsets_b[3] = {3, 5, 6};  // the same child, from row 3
  const void* item_buffers[2] = {nullptr, values};
  ArrowArray item = testing::HandMadeArray(6, 0, item_buffers, 2);
  ArrowArray* items[1] = {&item};
  const void* a_buffers[2] = {nullptr, offsets_a};
  const void* b_buffers[2] = {nullptr, offsets_b};
  ArrowArray a = testing::HandMadeArray(2, 0, a_buffers, 2, items, 1);
  ArrowArray b = testing::HandMadeArray(2, 0, b_buffers, 2, items, 1);
  const Field field = Field::Make("+l", "x", {Field::Make("g", "item")});
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, field.Export());
  const ArrowArray* parts[2] = {&a, &b};
  ASSERT_OK_AND_ASSIGN(UniqueArray joined, Concatenate(schema.get(), parts));
  ASSERT_EQ(joined->length, 4);
  const ArrowArray* child = joined->children[0];
  ASSERT_EQ(child->length, 6);
  uint64_t got[6];
  std::memcpy(got, child->buffers[1], sizeof(got));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i], bits[i]) << "row " << i;
  const auto* offsets = static_cast<const int32_t*>(joined->buffers[1]);
  EXPECT_EQ(std::vector<int32_t>(offsets, offsets + 5), (std::vector<int32_t>{0, 2, 3, 5, 6}));
}

// Parts that share one dictionary array keep it once; parts with their own have theirs joined,
// each part's indices moved past the values before.
TEST(Concatenate, SharesOneDictionaryAndJoinsDistinctOnes) {
  const Field field = Field::Dictionary("x", "c", Field::Make("u", "values"));
  const std::string json = R"(["p", "q", null, "p", "r", "q"])";
  ASSERT_OK_AND_ASSIGN(Array one, testing::ArrayFromJson(field, json));
  ASSERT_OK_AND_ASSIGN(Array other, testing::ArrayFromJson(field, R"(["s", "p"])"));
  const int64_t words = one.array()->dictionary->length;
  {
    const ArrowArray* parts[2] = {one.array(), one.array()};
    ASSERT_OK_AND_ASSIGN(UniqueArray joined, Concatenate(one.schema(), parts));
    EXPECT_EQ(joined->dictionary->length, words);
    ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(one.schema()));
    ASSERT_OK(view.SetArray(joined.get()));
    ASSERT_OK(view.Validate(ValidationLevel::kFull));
    EXPECT_EQ(Json::parse(testing::ToJson(view)),
              Json::parse(R"(["p", "q", null, "p", "r", "q", "p", "q", null, "p", "r", "q"])"));
  }
  const ArrowArray* parts[2] = {one.array(), other.array()};
  ASSERT_OK_AND_ASSIGN(UniqueArray joined, Concatenate(one.schema(), parts));
  EXPECT_EQ(joined->dictionary->length, words + other.array()->dictionary->length);
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(one.schema()));
  ASSERT_OK(view.SetArray(joined.get()));
  ASSERT_OK(view.Validate(ValidationLevel::kFull));
  EXPECT_EQ(Json::parse(testing::ToJson(view)),
            Json::parse(R"(["p", "q", null, "p", "r", "q", "s", "p"])"));
}

// int8 indices reach 127: two dictionaries of 100 values each cannot be one.
TEST(Concatenate, RefusesADictionaryItsIndicesCannotReach) {
  const Field field = Field::Dictionary("x", "c", Field::Make("i", "values"));
  Json a = Json::array();
  Json b = Json::array();
  for (int i = 0; i < 100; ++i) {
    a.push_back(i);
    b.push_back(100 + i);
  }
  ASSERT_OK_AND_ASSIGN(Array pa, testing::ArrayFromJson(field, a.dump()));
  ASSERT_OK_AND_ASSIGN(Array pb, testing::ArrayFromJson(field, b.dump()));
  const ArrowArray* parts[2] = {pa.array(), pb.array()};
  ASSERT_RAISES_WITH(StatusCode::kOutOfRange,
                     "the joined dictionary holds 200 values, past what its int8 indices reach",
                     Concatenate(pa.schema(), parts));
}

// Strings whose bytes would pass 2 GiB together cannot keep 32-bit offsets: refused, naming the
// sizes, before any byte is copied (the parts' bytes are never read here).
TEST(Concatenate, RefusesStringsPastThirtyTwoBitOffsets) {
  const Field field = Field::Make("u", "v");
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, field.Export());
  const int32_t big[2] = {0, std::numeric_limits<int32_t>::max() - 10};
  const int32_t small[2] = {0, 11};
  const uint8_t none[1] = {0};
  const void* big_buffers[3] = {nullptr, big, none};
  const void* small_buffers[3] = {nullptr, small, none};
  const ArrowArray a = testing::HandMadeArray(1, 0, big_buffers, 3);
  const ArrowArray b = testing::HandMadeArray(1, 0, small_buffers, 3);
  const ArrowArray* parts[2] = {&a, &b};
  ASSERT_RAISES_WITH(StatusCode::kOutOfRange, "2147483648 bytes of values, past the 2147483647",
                     Concatenate(schema.get(), parts));
}

// A part that is not what its type says is refused by its name, with what was wrong.
TEST(Concatenate, NamesThePartThatIsInvalid) {
  const Field field = Field::Make("u", "v");
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, field.Export());
  const int32_t backwards[3] = {0, 5, 2};
  const int32_t fine[2] = {0, 1};
  const uint8_t bytes[8] = {};
  const void* a_buffers[3] = {nullptr, fine, bytes};
  const void* b_buffers[3] = {nullptr, backwards, bytes};
  const ArrowArray a = testing::HandMadeArray(1, 0, a_buffers, 3);
  const ArrowArray b = testing::HandMadeArray(1, 1, b_buffers, 3);
  const ArrowArray* parts[2] = {&a, &b};
  const std::string_view names[2] = {"the dictionary", "the delta"};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "the delta is invalid",
                     Concatenate(schema.get(), parts, names));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "part 1 is invalid",
                     Concatenate(schema.get(), parts));
  const ArrowArray* released[1] = {nullptr};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "part 0 is NULL or released",
                     Concatenate(schema.get(), released));
}

// A dense union's offset past its child, which default validation does not read, is refused
// naming the element.
TEST(Concatenate, RefusesADenseUnionOffsetPastItsChild) {
  const testing::DenseUnionPastItsChild bad;
  const ArrowArray* parts[1] = {&bad.array};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "element 1 has type id 0 and offset 5",
                     Concatenate(bad.schema.get(), parts));
}

}  // namespace
}  // namespace ferry
