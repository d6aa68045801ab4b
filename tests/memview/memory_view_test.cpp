// MemoryView geometry: item pointers, contiguity and request flags, checked by hand.
#include "ferry/memview/memory_view.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "support/test_util.hpp"

namespace ferry::memview {
namespace {

using ::testing::HasSubstr;

MemoryView View(std::vector<int32_t>* storage, std::vector<int64_t> shape,
                std::vector<int64_t> strides = {}) {
  auto view = MakeContiguousView(nullptr, reinterpret_cast<uint8_t*>(storage->data()),
                                 static_cast<int64_t>(storage->size() * 4), "l", shape, false);
  EXPECT_TRUE(view.ok()) << view.status().message();
  view->strides = std::move(strides);
  return std::move(view).ValueOrDie();
}

int32_t At(const MemoryView& v, std::vector<int64_t> idx) {
  int32_t out;
  std::memcpy(&out, GetItemPointer(v, idx.data()), 4);
  return out;
}

TEST(MemoryView, RowMajorAndStridedPointers) {
  std::vector<int32_t> data(12);
  std::iota(data.begin(), data.end(), 0);
  MemoryView v = View(&data, {3, 4});
  EXPECT_EQ(At(v, {0, 0}), 0);
  EXPECT_EQ(At(v, {2, 3}), 11);
  EXPECT_EQ(v.stride(0), 16);
  // A transposed view of the same bytes: shape 4x3, strides (4, 16).
  MemoryView t = View(&data, {4, 3}, {4, 16});
  EXPECT_EQ(At(t, {3, 2}), 11);
  EXPECT_EQ(At(t, {1, 0}), 1);
  EXPECT_TRUE(IsColumnMajorContiguous(t));
  EXPECT_FALSE(IsRowMajorContiguous(t));
}

TEST(MemoryView, NegativeStridesWalkBackwards) {
  std::vector<int32_t> data = {10, 11, 12, 13};
  MemoryView v = View(&data, {4}, {-4});
  v.data += 12;  // points at the last item; index i reads data[3 - i]
  EXPECT_EQ(At(v, {0}), 13);
  EXPECT_EQ(At(v, {3}), 10);
  EXPECT_FALSE(IsRowMajorContiguous(v));
}

TEST(MemoryView, ZeroDimensionsAndZeroSizes) {
  std::vector<int32_t> data = {42};
  MemoryView scalar = View(&data, {});
  EXPECT_EQ(scalar.ndim, 0);
  EXPECT_EQ(scalar.n_items(), 1);
  EXPECT_EQ(At(scalar, {}), 42);
  ASSERT_OK_AND_ASSIGN(uint8_t * p, GetItemPointerChecked(scalar, {}));
  EXPECT_EQ(p, scalar.data);

  MemoryView empty = View(&data, {0, 5}, {999, -7});
  EXPECT_EQ(empty.n_items(), 0);
  EXPECT_TRUE(IsRowMajorContiguous(empty));  // no items: contiguous whatever the strides
  EXPECT_TRUE(IsColumnMajorContiguous(empty));
}

TEST(MemoryView, ExtentOneDimensionsIgnoreTheirStride) {
  std::vector<int32_t> data(4);
  MemoryView v = View(&data, {1, 4}, {12345, 4});
  EXPECT_TRUE(IsRowMajorContiguous(v));
  MemoryView gap = View(&data, {2, 2}, {12, 4});  // rows 12 bytes apart: a gap
  EXPECT_FALSE(IsRowMajorContiguous(gap));
}

TEST(MemoryView, IndirectPilStyle) {
  // Two rows living in separate blocks, reached through a table of row pointers.
  std::vector<int32_t> row0 = {1, 2, 3};
  std::vector<int32_t> row1 = {4, 5, 6};
  int32_t* rows[2] = {row0.data(), row1.data()};
  MemoryView v;
  v.data = reinterpret_cast<uint8_t*>(rows);
  v.format = "l";
  v.item_size = 4;
  v.ndim = 2;
  v.shape = {2, 3};
  v.strides = {sizeof(int32_t*), 4};
  v.sub_offsets = {0, -1};  // dimension 0 holds pointers
  EXPECT_EQ(At(v, {0, 2}), 3);
  EXPECT_EQ(At(v, {1, 0}), 4);
  EXPECT_FALSE(IsRowMajorContiguous(v));
  // 1-D indirect: each item is a pointer to the value, 4 bytes further on.
  int32_t pair[2] = {0, 77};
  int32_t* ptrs[1] = {pair};
  MemoryView one;
  one.data = reinterpret_cast<uint8_t*>(ptrs);
  one.item_size = 4;
  one.ndim = 1;
  one.shape = {1};
  one.strides = {sizeof(int32_t*)};
  one.sub_offsets = {4};
  EXPECT_EQ(At(one, {0}), 77);
}

TEST(MemoryView, CheckedPointersReportIndexAndDimension) {
  std::vector<int32_t> data(6);
  MemoryView v = View(&data, {2, 3});
  ASSERT_RAISES_WITH(StatusCode::kOutOfRange, "index 3 is out of range [0, 3) in dimension 1",
                     GetItemPointerChecked(v, {1, 3}));
  ASSERT_RAISES_WITH(StatusCode::kOutOfRange, "index -1 is out of range",
                     GetItemPointerChecked(v, {-1, 0}));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "1 indices given for 2 dimensions",
                     GetItemPointerChecked(v, {1}));
}

TEST(MemoryView, RequestFlagsAreEnforced) {
  std::vector<int32_t> data(6);
  MemoryView v = View(&data, {2, 3});
  v.readonly = true;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "WRITABLE was requested but the memory is read-only",
                     ConformToRequest(&v, kWritable | kStrides));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "2 dimensions but MULTI_DIMENSIONAL was not requested",
                     ConformToRequest(&v, kSimple));
  MemoryView t = View(&data, {3, 2}, {4, 12});
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "ROW_MAJOR was requested but the view is not row-major contiguous",
                     ConformToRequest(&t, kRowMajor));
  ASSERT_OK(ConformToRequest(&t, kColumnMajor));
  ASSERT_OK(ConformToRequest(&t, kAnyContiguous));
  MemoryView t2 = View(&data, {3, 2}, {4, 12});
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs strides but STRIDES was not requested",
                     ConformToRequest(&t2, kMultiDimensional));
  MemoryView ok = View(&data, {2, 3}, {12, 4});
  ASSERT_OK(ConformToRequest(&ok, kMultiDimensional));
  EXPECT_TRUE(ok.strides.empty());  // not asked for, so not handed out
  EXPECT_TRUE(ok.format.empty());   // no FORMAT: unsigned bytes
  MemoryView ind = View(&data, {6});
  ind.sub_offsets = {0};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "INDIRECT was not requested",
                     ConformToRequest(&ind, kStrides));
}

TEST(MemoryView, MakeChecksShapeAgainstBytes) {
  std::vector<int32_t> data(6);
  ASSERT_RAISES_WITH(
      StatusCode::kInvalidArgument, "the shape needs 28 bytes but only 24 are given",
      MakeContiguousView(nullptr, reinterpret_cast<uint8_t*>(data.data()), 24, "l", {7}, true));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "shape[1] is negative",
                     MakeContiguousView(nullptr, nullptr, 0, "l", {1, -2}, true));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "invalid type character 'b'",
                     MakeContiguousView(nullptr, nullptr, 0, "b8", {1}, true));
}

}  // namespace
}  // namespace ferry::memview
