// ArrayBytes: a batch's size by its schema's plan. Hand-computed sizes, the same figure as an
// ArrayView's buffer sizes for every type (whole and sliced), and clear errors for arrays that
// disagree with the schema.
#include "ferry/format/array_bytes.hpp"

#include <gtest/gtest.h>

#include "support/ipc_util.hpp"
#include "support/test_util.hpp"
#include "support/type_cases.hpp"

namespace ferry {
namespace {

// The sizes by hand: rows 1 and 2 of {x int64, s string, b bool} where s is ["a", "bc", null]
// (a validity bitmap) and nothing else has nulls.
TEST(ArrayBytes, SizesASlicedBatchAsItsLayoutImplies) {
  const Field root =
      testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s"), Field::Make("b", "b")});
  ASSERT_OK_AND_ASSIGN(Array batch,
                       testing::SlicedArrayFromJson(
                           root,
                           R"([{"x": 1, "s": "a", "b": true}, {"x": 2, "s": "bc", "b": false},
                                       {"x": 3, "s": null, "b": true}])",
                           1, 2));
  ASSERT_OK_AND_ASSIGN(ArrayBytes sizes, ArrayBytes::Make(batch.schema()));
  // x: 3 int64 (offset 1 + length 2) = 24; s: a bitmap byte, 4 int32 offsets = 16, and its
  // characters up to offsets[3] = 3; b: a bitmap byte for its values; the root has no bitmap.
  ASSERT_OK_AND_ASSIGN(int64_t bytes, sizes.Of(batch.array()));
  EXPECT_EQ(bytes, 24 + (1 + 16 + 3) + 1);
  // The plan serves every batch of the schema: the whole one too (x 24, s 1 + 16 + 3, b 1).
  ASSERT_OK_AND_ASSIGN(Array whole, testing::SlicedArrayFromJson(root,
                                                                 R"([{"x": 1, "s": "a", "b": true},
                                            {"x": 2, "s": "bc", "b": false},
                                            {"x": 3, "s": null, "b": true}])",
                                                                 0, 3));
  ASSERT_OK_AND_ASSIGN(int64_t whole_bytes, sizes.Of(whole.array()));
  EXPECT_EQ(whole_bytes, 24 + (1 + 16 + 3) + 1);
}

// Every type ferry supports, with nulls, whole and sliced: the figure an ArrayView gives.
TEST(ArrayBytes, EveryTypeSizesAsAnArrayViewDoes) {
  const auto& cases = testing::TypeCases();
  for (size_t t = 0; t < cases.size(); ++t) {
    const testing::TypeCase& tc = cases[t];
    auto [values, rendered] = testing::GenerateValues(tc, t * 7919 + 1, 23, true);
    (void)rendered;
    for (const auto& [offset, length] : {std::pair<int64_t, int64_t>{0, 23}, {5, 11}, {23, 0}}) {
      SCOPED_TRACE(tc.name + " rows " + std::to_string(offset) + "+" + std::to_string(length));
      ASSERT_OK_AND_ASSIGN(Array a,
                           testing::SlicedArrayFromJson(tc.field, values.dump(), offset, length));
      ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(a.schema()));
      ASSERT_OK(view.SetArray(a.array()));
      ASSERT_OK_AND_ASSIGN(ArrayBytes sizes, ArrayBytes::Make(a.schema()));
      ASSERT_OK_AND_ASSIGN(int64_t bytes, sizes.Of(a.array()));
      EXPECT_EQ(bytes, ViewBytes(view));
      if (length > 0 && tc.field.format != "n") {
        EXPECT_GT(bytes, 0);  // a null array has no buffers
      }
    }
  }
}

TEST(ArrayBytes, AnArrayThatDisagreesWithTheSchemaIsRefusedByName) {
  const Field root = testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s")});
  ASSERT_OK_AND_ASSIGN(
      Array batch,
      testing::SlicedArrayFromJson(root, R"([{"x": 1, "s": "a"}, {"x": 2, "s": "bc"}])", 0, 2));
  ASSERT_OK_AND_ASSIGN(ArrayBytes sizes, ArrayBytes::Make(batch.schema()));
  ArrowArray root_copy = *batch.array();
  ArrowArray s_copy = *batch.array()->children[1];
  ArrowArray* children[] = {batch.array()->children[0], &s_copy};
  root_copy.children = children;
  s_copy.n_buffers = 2;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "sizing the array at \"s\": its buffers are not the ones its type has",
                     sizes.Of(&root_copy));
  s_copy = *batch.array()->children[1];
  s_copy.offset = -1;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "\"s\": its length or offset is negative",
                     sizes.Of(&root_copy));
  s_copy = *batch.array()->children[1];
  root_copy.n_children = 1;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "its children are not the schema's",
                     sizes.Of(&root_copy));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL or released", sizes.Of(nullptr));
  // The plan is unharmed: the batch itself still sizes.
  ASSERT_OK_AND_ASSIGN(int64_t bytes, sizes.Of(batch.array()));
  EXPECT_EQ(bytes, 16 + (12 + 3));
}

TEST(ArrayBytes, ASchemaItCannotReadIsRefusedAsAViewWouldBe) {
  ArrowSchema released{};
  EXPECT_FALSE(ArrayBytes::Make(&released).ok());
}

}  // namespace
}  // namespace ferry
