// Memory views of Arrow arrays: fixed-width, fixed-size lists and fixed_shape_tensor.
#include "ferry/memview/arrow.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "support/test_util.hpp"

namespace ferry::memview {
namespace {

std::shared_ptr<const Array> Make(const Field& field, const std::string& json, int64_t offset = 0,
                                  int64_t length = -1) {
  auto whole = testing::ArrayFromJson(field, json);
  EXPECT_TRUE(whole.ok()) << whole.status().message();
  if (length < 0) return std::make_shared<Array>(std::move(whole).ValueOrDie());
  auto sliced = testing::SlicedArrayFromJson(field, json, offset, length);
  EXPECT_TRUE(sliced.ok()) << sliced.status().message();
  return std::make_shared<Array>(std::move(sliced).ValueOrDie());
}

template <typename T>
T At(const MemoryView& v, std::vector<int64_t> idx) {
  T out;
  std::memcpy(&out, GetItemPointer(v, idx.data()), sizeof(T));
  return out;
}

TEST(ArrowViews, FixedWidthSlicedIsZeroCopy) {
  auto array = Make(Field::Make("i", "x"), "[10, 11, 12, 13, 14]", 2, 3);
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfArray(array, kFormat | kStrides));
  EXPECT_EQ(v.format, "l");
  EXPECT_EQ(v.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(At<int32_t>(v, {0}), 12);
  EXPECT_EQ(At<int32_t>(v, {2}), 14);
  EXPECT_EQ(v.data, array->view().buffer(1).data + 8);  // points into the array's buffer
  EXPECT_TRUE(v.readonly);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "WRITABLE was requested",
                     ViewOfArray(array, kWritable));
}

TEST(ArrowViews, FormatsByType) {
  struct Case {
    const char* format;
    const char* item;
  };
  for (const Case& c : {Case{"c", "c"}, Case{"S", "S"}, Case{"L", "Q"}, Case{"g", "d"},
                        Case{"tsu:", "q"}, Case{"d:38,2", "q2"}, Case{"d:76,2,256", "q4"},
                        Case{"w:16", "C16"}, Case{"tin", "l2q"}, Case{"e", "{float16}"}}) {
    auto array = Make(Field::Make(c.format, "x"), "[]");
    ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfArray(array, kFormat));
    EXPECT_EQ(v.format, c.item) << c.format;
  }
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "bit-packed",
                     ViewOfArray(Make(Field::Make("b", "x"), "[]"), kFormat));
}

TEST(ArrowViews, NullsAreRefusedUnlessAllowed) {
  auto array = Make(Field::Make("l", "x"), "[1, null, 3]");
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "the array has nulls",
                     ViewOfArray(array, kFormat));
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfArray(array, kFormat, {/*allow_nulls=*/true}));
  EXPECT_EQ(At<int64_t>(v, {2}), 3);
}

TEST(ArrowViews, FixedSizeListIsTwoDimensional) {
  auto array = Make(Field::Make("+w:3", "x", {Field::Make("s", "item")}),
                    "[[1, 2, 3], [4, 5, 6], [7, 8, 9]]", 1, 2);
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfArray(array, kFormat | kStrides));
  EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(v.strides, (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(At<int16_t>(v, {0, 0}), 4);
  EXPECT_EQ(At<int16_t>(v, {1, 2}), 9);
  EXPECT_TRUE(IsRowMajorContiguous(v));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "MULTI_DIMENSIONAL was not requested",
                     ViewOfArray(array, kFormat));
}

Field Tensor(const std::string& metadata, int32_t size) {
  return Field::Extension(
      "t", "arrow.fixed_shape_tensor", metadata,
      Field::Make("+w:" + std::to_string(size), "t", {Field::Make("i", "item")}));
}

TEST(ArrowViews, FixedShapeTensorHonoursPermutation) {
  // Logical shape [2, 3] stored with permutation [1, 0]: physical (3, 2) row-major.
  auto array = Make(Tensor(R"({"shape": [2, 3], "permutation": [1, 0]})", 6),
                    "[[0, 1, 2, 3, 4, 5], [10, 11, 12, 13, 14, 15]]");
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfArray(array, kFormat | kStrides));
  EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(v.strides, (std::vector<int64_t>{24, 4, 8}));
  // Logical [i, j] is physical [j, i] = storage index j * 2 + i.
  EXPECT_EQ(At<int32_t>(v, {0, 0, 1}), 2);
  EXPECT_EQ(At<int32_t>(v, {0, 1, 0}), 1);
  EXPECT_EQ(At<int32_t>(v, {1, 1, 2}), 15);
  EXPECT_TRUE(IsColumnMajorContiguous(v) == false);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "ROW_MAJOR was requested",
                     ViewOfArray(array, kRowMajor | kFormat));
}

TEST(ArrowViews, TensorEdgeCases) {
  auto empty = Make(Tensor(R"({"shape": [0, 4]})", 0), "[[], []]");
  ASSERT_OK_AND_ASSIGN(MemoryView v, ViewOfArray(empty, kFormat | kStrides));
  EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 0, 4}));
  EXPECT_EQ(v.n_items(), 0);
  auto with_nulls = Make(Tensor(R"({"shape": [2]})", 2), "[[1, 2], null]");
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "has nulls",
                     ViewOfArray(with_nulls, kFormat | kStrides));
  auto bad = Make(Tensor(R"({"shape": [2, 2]})", 3), "[[1, 2, 3]]");
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "shape has 4 elements but the list size is 3",
                     ViewOfArray(bad, kFormat | kStrides));
  auto bad_perm = Make(Tensor(R"({"shape": [1, 2], "permutation": [0, 0]})", 2), "[[1, 2]]");
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is not a permutation",
                     ViewOfArray(bad_perm, kFormat | kStrides));
}

TEST(ArrowViews, RegisteredExporterKeepsTheArrayAlive) {
  ExporterRegistry registry;
  RegisterArrowExporters(registry);
  auto array = Make(Field::Make("d:9,1,32", "x"), R"(["1.5", "2.5"])");
  std::weak_ptr<const Array> weak = array;
  ASSERT_OK_AND_ASSIGN(MemoryView v, registry.Get(array, kFormat));
  array.reset();
  EXPECT_FALSE(weak.expired());  // the view's owner holds it
  EXPECT_EQ(At<int32_t>(v, {1}), 25);
  ASSERT_OK(registry.Release(&v));
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace ferry::memview

namespace ferry::memview {
namespace {

MemoryView Ints(std::shared_ptr<std::vector<int32_t>> data, std::vector<int64_t> shape,
                std::vector<int64_t> strides = {}) {
  auto v = MakeContiguousView(data, reinterpret_cast<uint8_t*>(data->data()),
                              static_cast<int64_t>(data->size() * 4), "l", std::move(shape), true);
  EXPECT_TRUE(v.ok()) << v.status().message();
  v->strides = std::move(strides);
  return std::move(v).ValueOrDie();
}

std::shared_ptr<std::vector<int32_t>> Iota(int n) {
  auto d = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(n));
  std::iota(d->begin(), d->end(), 0);
  return d;
}

TEST(ArrayFromView, OneDimensionIsZeroCopy) {
  auto data = Iota(4);
  MemoryView v = Ints(data, {4});
  ASSERT_OK_AND_ASSIGN(Array a, ArrayFromView(v));
  ASSERT_OK(a.Validate(ValidationLevel::kFull));
  EXPECT_EQ(testing::ToJson(a.view()), "[0, 1, 2, 3]");
  EXPECT_EQ(a.view().buffer(1).data, reinterpret_cast<const uint8_t*>(data->data()));
  std::weak_ptr<std::vector<int32_t>> weak = data;
  data.reset();
  v = MemoryView();
  EXPECT_FALSE(weak.expired());  // the array keeps the view's owner
}

// A view of one-byte booleans has no Arrow type (Arrow's booleans are bits): refused by name.
TEST(ArrayFromView, OneByteBooleansAreRefused) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(std::vector<uint8_t>{1, 0, 1});
  ASSERT_OK_AND_ASSIGN(MemoryView v,
                       MakeContiguousView(bytes, bytes->data(), 3, "{bool}", {3}, true));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "an Arrow boolean array is bit-packed",
                     ArrayFromView(v));
  auto pairs = std::make_shared<std::vector<uint8_t>>(16);
  ASSERT_OK_AND_ASSIGN(MemoryView z,
                       MakeContiguousView(pairs, pairs->data(), 16, "{complex64}", {2}, true));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "Arrow has no complex number type",
                     ArrayFromView(z));
}

TEST(ArrayFromView, TwoDimensionsBecomeAFixedSizeList) {
  MemoryView v = Ints(Iota(6), {2, 3});
  ASSERT_OK_AND_ASSIGN(Array a, ArrayFromView(v));
  ASSERT_OK(a.Validate(ValidationLevel::kFull));
  EXPECT_EQ(testing::ToJson(a.view()), "[[0, 1, 2], [3, 4, 5]]");
  EXPECT_STREQ(a.schema()->format, "+w:3");
}

TEST(ArrayFromView, InnerPermutationsBecomeTensorPermutations) {
  // Two 2x3 tensors whose inner dimensions are stored transposed (column-major inside).
  auto data = Iota(12);
  MemoryView v = Ints(data, {2, 2, 3}, {24, 4, 8});
  ASSERT_OK_AND_ASSIGN(Array a, ArrayFromView(v));
  ASSERT_OK(a.Validate(ValidationLevel::kFull));
  EXPECT_EQ(a.view().type().extension_name, "arrow.fixed_shape_tensor");
  EXPECT_THAT(std::string(a.view().type().extension_metadata),
              ::testing::HasSubstr("\"permutation\": [1, 0]"));
  auto shared = std::make_shared<Array>(std::move(a));
  ASSERT_OK_AND_ASSIGN(MemoryView back, ViewOfArray(shared, kFormat | kStrides));
  EXPECT_EQ(back.shape, v.shape);
  EXPECT_EQ(back.strides, v.strides);
  EXPECT_EQ(back.data, v.data);  // zero-copy both ways
}

TEST(ArrayFromView, OtherLayoutsCopyOnlyWhenAllowed) {
  MemoryView t = Ints(Iota(6), {3, 2}, {4, 12});  // dimension 0 innermost
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "allow a copy to convert", ArrayFromView(t));
  ASSERT_OK_AND_ASSIGN(Array a, ArrayFromView(t, {/*allow_copy=*/true}));
  EXPECT_EQ(testing::ToJson(a.view()), "[[0, 3], [1, 4], [2, 5]]");
  MemoryView rev = Ints(Iota(3), {3}, {-4});
  rev.data += 8;
  ASSERT_OK_AND_ASSIGN(Array r, ArrayFromView(rev, {true}));
  EXPECT_EQ(testing::ToJson(r.view()), "[2, 1, 0]");
  MemoryView pairs = Ints(Iota(4), {2});
  pairs.format = "l2";
  pairs.item_desc = *ParseItemFormat("l2");
  pairs.item_size = 8;
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "one scalar per item", ArrayFromView(pairs));
}

}  // namespace
}  // namespace ferry::memview
