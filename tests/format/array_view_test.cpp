// ArrayView::SetArray and SetArrayMinimal: structural checks of the C struct against the schema,
// buffer sizes computed per layout, and a minimal setup that touches no data buffer.
#include "ferry/format/array_view.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "support/test_util.hpp"

namespace ferry {
namespace {

Array Build(const Field& f, const std::string& json) {
  auto r = testing::ArrayFromJson(f, json);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).ValueOrDie();
}

TEST(SetArray, StructuralErrors) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("u", "s").Export());
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
  ArrowArray released{};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "field \"s\": array is released",
                     view.SetArray(&released));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "array is NULL", view.SetArray(nullptr));

  Array a = Build(Field::Make("u", "s"), R"(["x"])");
  ArrowArray copy = *a.array();
  copy.n_buffers = 2;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "n_buffers is 2 but string needs 3",
                     view.SetArray(&copy));
  copy = *a.array();
  copy.n_children = 1;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "n_children is 1 but the schema has 0",
                     view.SetArray(&copy));
  copy = *a.array();
  copy.length = -1;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "length is negative", view.SetArray(&copy));
  copy = *a.array();
  copy.offset = INT64_MAX;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "offset + length overflows",
                     view.SetArray(&copy));
}

TEST(SetArrayMinimal, ReadsNoDataBuffer) {
  // Buffers that would fault if read: minimal setup and validation must not touch them.
  Array a = Build(Field::Make("u", "s"), R"(["abc", "de"])");
  ArrowArray fake = *a.array();
  const void* bogus[3] = {nullptr, reinterpret_cast<const void*>(0x10),
                          reinterpret_cast<const void*>(0x20)};
  fake.buffers = bogus;
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("u", "s").Export());
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArrayMinimal(&fake));
  EXPECT_EQ(view.buffer(1).size, 12);
  EXPECT_EQ(view.buffer(2).size, -1);
  ASSERT_OK(view.Validate(ValidationLevel::kMinimal));
}

TEST(SetArray, ListViewBuffersHoldOneEntryPerElement) {
  // Unlike list offsets, list view offsets have no trailing entry: 3 elements, 12 bytes each.
  for (const char* format : {"+vl", "+vL"}) {
    const int64_t width = format[2] == 'l' ? 4 : 8;
    Field f = Field::Make(format, "lv", {Field::Make("i", "item")});
    Array a = Build(f, "[[1], null, [2, 3]]");
    ASSERT_OK_AND_ASSIGN(UniqueSchema schema, f.Export());
    ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
    ASSERT_OK(view.SetArray(a.array()));
    EXPECT_EQ(view.buffer(1).size, 3 * width) << format;
    EXPECT_EQ(view.buffer(2).size, 3 * width) << format;
  }
}

// A view's bytes are in bounds inline, or within the data buffer it names; an index past the
// buffers or a range past the buffer's size is not.
TEST(ArrayView, TellsWhetherAViewPointsInsideItsData) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("vz", "x").Export());
  const char bytes[20] = "abcdefghijklmnopqrs";
  const int64_t sizes[1] = {20};
  // Views of 16 bytes: size, then 12 inline bytes or prefix, buffer index and offset.
  int32_t views[4][4] = {{3, 0, 0, 0}, {14, 0, 0, 5}, {15, 0, 1, 0}, {15, 0, 0, 6}};
  std::memcpy(&views[0][1], "xyz", 3);
  const void* buffers[4] = {nullptr, views, bytes, sizes};
  const ArrowArray array = testing::HandMadeArray(4, 0, buffers, 4);
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(&array));
  EXPECT_TRUE(view.ViewInBounds(0));   // inline
  EXPECT_TRUE(view.ViewInBounds(1));   // bytes 5..19 of buffer 0
  EXPECT_FALSE(view.ViewInBounds(2));  // buffer 1: there is none
  EXPECT_FALSE(view.ViewInBounds(3));  // bytes 6..21: one past the buffer
  EXPECT_EQ(view.GetBytes(1), "fghijklmnopqrs");
}

}  // namespace
}  // namespace ferry
