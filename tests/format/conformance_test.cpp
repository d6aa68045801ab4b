// The core conformance suite: every type x nulls x slice offset x length. Each case builds an
// array from generated JSON values, slices it, validates it fully and renders it back; the oracle
// is the generated value list itself, sliced in the test.
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "ferry/format/schema_view.hpp"
#include "support/test_util.hpp"
#include "support/type_cases.hpp"

namespace ferry {
namespace {

using testing::Json;
using testing::TypeCase;

const std::vector<TypeCase>& Cases() { return testing::TypeCases(); }

struct Param {
  size_t type_index;
  bool nulls;
  int64_t offset;
  int64_t length;
};

class ConformanceTest : public ::testing::TestWithParam<Param> {};

TEST_P(ConformanceTest, BuildSliceValidateRender) {
  const Param p = GetParam();
  const TypeCase& tc = Cases()[p.type_index];
  const int64_t total = p.offset + p.length;
  auto [values, rendered] = testing::GenerateValues(
      tc, p.type_index * 7919 + static_cast<uint64_t>(p.length), total, p.nulls);

  ASSERT_OK_AND_ASSIGN(Array whole, testing::ArrayFromJson(tc.field, values.dump()));
  ASSERT_OK(whole.Validate(ValidationLevel::kFull));
  EXPECT_EQ(whole.length(), total);

  ASSERT_OK_AND_ASSIGN(Array sliced,
                       testing::SlicedArrayFromJson(tc.field, values.dump(), p.offset, p.length));
  for (auto level :
       {ValidationLevel::kMinimal, ValidationLevel::kDefault, ValidationLevel::kFull}) {
    ASSERT_OK(sliced.Validate(level));
  }
  ASSERT_EQ(sliced.length(), p.length);

  Json expected = Json::array();
  for (int64_t i = p.offset; i < total; ++i) expected.push_back(rendered[static_cast<size_t>(i)]);
  ASSERT_OK_AND_ASSIGN(std::string json, ArrayToJson(sliced.view()));
  Json actual = Json::parse(json);
  EXPECT_EQ(actual, expected) << "type " << tc.name;

  // Null counts agree with the oracle (top level; unions and run-end encoded have none).
  int64_t expected_nulls = 0;
  for (const Json& v : expected) expected_nulls += v.is_null() ? 1 : 0;
  int64_t nulls = 0;
  for (int64_t i = 0; i < sliced.length(); ++i) nulls += sliced.view().IsNull(i) ? 1 : 0;
  if (tc.field.format != "+r") {
    EXPECT_EQ(nulls, expected_nulls);
  }
}

std::vector<Param> AllParams() {
  std::vector<Param> params;
  for (size_t t = 0; t < Cases().size(); ++t) {
    for (bool nulls : {false, true}) {
      for (int64_t offset : {0, 3, 13}) {
        for (int64_t length : {0, 1, 1000}) params.push_back({t, nulls, offset, length});
      }
    }
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ConformanceTest, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           const Param& p = param_info.param;
                           return Cases()[p.type_index].name + (p.nulls ? "_nulls" : "_dense") +
                                  "_off" + std::to_string(p.offset) + "_len" +
                                  std::to_string(p.length);
                         });

}  // namespace
}  // namespace ferry
