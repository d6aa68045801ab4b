// How a writer knows a dictionary by its values (sent_dictionaries.hpp): a prefix's hash and the
// whole's from one pass agree with each alone; equal values hash alike whatever their layout;
// values that differ in one bit do not; a bad offset fails rather than being read.
#include "ipc/sent_dictionaries.hpp"

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ferry/format/schema.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using ipc::internal::HashValues;
using ipc::internal::ValuesHash;

// `rows` rows of struct<k: int64, s: string, l: list<double>>, every seventh null.
std::string NestedRows(int rows) {
  nlohmann::json out = nlohmann::json::array();
  for (int i = 0; i < rows; ++i) {
    if (i % 7 == 3) {
      out.push_back(nullptr);
    } else {
      out.push_back({{"k", i}, {"s", "v" + std::to_string(i)}, {"l", {i * 0.5, -i}}});
    }
  }
  return out.dump();
}

Field NestedField() {
  return Field::Make("+s", "x",
                     {Field::Make("l", "k"), Field::Make("u", "s"),
                      Field::Make("+l", "l", {Field::Make("g", "item")})});
}

// Across the blocks the hash is made of (4,096 rows): each prefix's hash from the one pass is
// the prefix's own, and the whole's is the whole's, for a flat type and a nested one.
TEST(SentDictionaries, HashesAPrefixAndTheWholeInOnePassAsEachAlone) {
  nlohmann::json strings = nlohmann::json::array();
  for (int i = 0; i < 10000; ++i) {
    strings.push_back(i % 5 == 1 ? nlohmann::json() : nlohmann::json("w" + std::to_string(i)));
  }
  ASSERT_OK_AND_ASSIGN(Array flat, testing::ArrayFromJson(Field::Make("u", "x"), strings.dump()));
  ASSERT_OK_AND_ASSIGN(Array nested, testing::ArrayFromJson(NestedField(), NestedRows(10000)));
  for (const Array* a : {&flat, &nested}) {
    for (const int64_t head : {0, 1, 4095, 4096, 4097, 8192, 9999, 10000}) {
      SCOPED_TRACE(head);
      ASSERT_OK_AND_ASSIGN(const ipc::internal::ValuesHashes both,
                           HashValues(a->schema(), a->array(), head));
      ASSERT_OK_AND_ASSIGN(const uint64_t alone, ValuesHash(a->schema(), a->array(), head));
      EXPECT_EQ(both.head, alone);
      ASSERT_OK_AND_ASSIGN(const uint64_t whole, ValuesHash(a->schema(), a->array(), 10000));
      EXPECT_EQ(both.full, whole);
      if (head < 10000) {
        EXPECT_NE(both.head, both.full);
      }
    }
  }
}

// The same rows at another offset, and with other bytes under a null row's children, hash
// alike: they are the same values.
TEST(SentDictionaries, KnowsEqualValuesWhateverTheirLayout) {
  const std::string rows = NestedRows(40);
  ASSERT_OK_AND_ASSIGN(Array plain, testing::ArrayFromJson(NestedField(), rows));
  const std::string shifted = R"([{"k": 99, "s": "first", "l": [1.0]}, )" + rows.substr(1);
  ASSERT_OK_AND_ASSIGN(Array sliced, testing::SlicedArrayFromJson(NestedField(), shifted, 1, 40));
  ASSERT_OK_AND_ASSIGN(const uint64_t a, ValuesHash(plain.schema(), plain.array(), 40));
  ASSERT_OK_AND_ASSIGN(const uint64_t b, ValuesHash(sliced.schema(), sliced.array(), 40));
  EXPECT_EQ(a, b);
  // Row 3 is null: what its int64 child holds there is no value.
  auto* k = static_cast<int64_t*>(const_cast<void*>(plain.array()->children[0]->buffers[1]));
  k[3] = 123456789;
  ASSERT_OK_AND_ASSIGN(const uint64_t c, ValuesHash(plain.schema(), plain.array(), 40));
  EXPECT_EQ(a, c);
  // Row 4 is not: its value changes the hash.
  k[4] = 123456789;
  ASSERT_OK_AND_ASSIGN(const uint64_t d, ValuesHash(plain.schema(), plain.array(), 40));
  EXPECT_NE(a, d);
}

// Doubles inside a list that differ only in a NaN's payload, or in zero's sign, are other values.
TEST(SentDictionaries, TellsDoublesApartByEveryBit) {
  ASSERT_OK_AND_ASSIGN(Array a,
                       testing::ArrayFromJson(Field::Make("+l", "x", {Field::Make("g", "item")}),
                                              "[[1.0, 0.0], [2.0], [3.0, 4.0]]"));
  ASSERT_OK_AND_ASSIGN(const uint64_t before, ValuesHash(a.schema(), a.array(), 3));
  auto* values = static_cast<uint64_t*>(const_cast<void*>(a.array()->children[0]->buffers[1]));
  values[1] = 0x8000000000000000;  // -0.0
  ASSERT_OK_AND_ASSIGN(const uint64_t negative_zero, ValuesHash(a.schema(), a.array(), 3));
  EXPECT_NE(before, negative_zero);
  values[2] = 0x7ff8000000000001;
  ASSERT_OK_AND_ASSIGN(const uint64_t one_nan, ValuesHash(a.schema(), a.array(), 3));
  values[2] = 0x7ff8000000000002;
  ASSERT_OK_AND_ASSIGN(const uint64_t other_nan, ValuesHash(a.schema(), a.array(), 3));
  EXPECT_NE(one_nan, other_nan);
}

// A dense union whose offset points past its child (which default validation does not read)
// fails, naming the row, instead of being read.
TEST(SentDictionaries, RefusesAnOffsetPastItsChild) {
  const testing::DenseUnionPastItsChild bad;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "row 1 of a dense_union points at row 6",
                     ValuesHash(bad.schema.get(), &bad.array, 2));
}

}  // namespace
}  // namespace ferry
