// The JSON rendering: StreamToJson over a stream, and hex byte strings read back by ArrayFromJson,
// each checked against values written out by hand.
#include "ferry/format/json.hpp"

#include <gtest/gtest.h>

#include "ferry/format/schema.hpp"
#include "ferry/format/stream.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

Result<UniqueArrayStream> Stream(const char* format, std::vector<const char*> batches) {
  FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, Field::Make(format, "x").Export());
  std::vector<UniqueArray> arrays;
  for (const char* json : batches) {
    FERRY_ASSIGN_OR_RAISE(UniqueArray a, ArrayFromJson(schema.get(), json));
    arrays.push_back(std::move(a));
  }
  return MakeArrayStream(std::move(schema), std::move(arrays));
}

TEST(StreamToJson, RendersEachBatchInOrderAndTakesTheStream) {
  ASSERT_OK_AND_ASSIGN(UniqueArrayStream stream, Stream("i", {"[1, null]", "[]", "[-3]"}));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> batches, StreamToJson(stream.get()));
  EXPECT_FALSE(stream.valid());
  EXPECT_EQ(batches, (std::vector<std::string>{"[1, null]", "[]", "[-3]"}));
}

TEST(StreamToJson, PassesTheStreamsErrorOn) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("i", "x").Export());
  ASSERT_OK_AND_ASSIGN(UniqueSchema copy, CopySchema(schema.get()));
  int calls = 0;
  ArraySource source = [&]() -> Result<std::optional<UniqueArray>> {
    if (++calls == 2) return Status::IOError("the disk went away at batch 1");
    FERRY_ASSIGN_OR_RAISE(UniqueArray a, ArrayFromJson(schema.get(), "[7]"));
    return std::optional<UniqueArray>(std::move(a));
  };
  ASSERT_OK_AND_ASSIGN(UniqueArrayStream stream, MakeArrayStream(std::move(copy), source));
  ASSERT_RAISES_WITH(StatusCode::kIOError, "the disk went away at batch 1",
                     StreamToJson(stream.get()));
}

TEST(ArrayFromJson, ReadsBinaryFromHexInEitherCaseAndNamesABadDigit) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("z", "x").Export());
  ASSERT_OK_AND_ASSIGN(UniqueArray a, ArrayFromJson(schema.get(), R"(["00ff", "AbCd", ""])"));
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(a.get()));
  EXPECT_EQ(view.GetBytes(0), std::string_view("\x00\xff", 2));
  EXPECT_EQ(view.GetBytes(1), "\xab\xcd");
  EXPECT_EQ(view.GetBytes(2), "");
  ASSERT_OK_AND_ASSIGN(std::string back, ArrayToJson(view));
  EXPECT_EQ(back, R"(["00ff", "abcd", ""])");
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "'x' at offset 1",
                     ArrayFromJson(schema.get(), R"(["0x"])"));
}

TEST(ArrayFromJson, IntervalPartsMustBeIntegersThatFit) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema day_time, Field::Make("tiD", "x").Export());
  ASSERT_OK_AND_ASSIGN(UniqueArray a, ArrayFromJson(day_time.get(), "[[1, -2], null]"));
  ASSERT_OK_AND_ASSIGN(ArrayView view, ArrayView::Make(day_time.get()));
  ASSERT_OK(view.SetArray(a.get()));
  ASSERT_OK_AND_ASSIGN(std::string back, ArrayToJson(view));
  EXPECT_EQ(back, "[[1, -2], null]");
  // The fuzzer's find: a float far outside int32 once went through an undefined conversion.
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "expected an integer",
                     ArrayFromJson(day_time.get(), "[[1, 533333333333133.33]]"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "integer 4294967296 is out of range for 32 bits",
                     ArrayFromJson(day_time.get(), "[[4294967296, 0]]"));
  ASSERT_OK_AND_ASSIGN(UniqueSchema mdn, Field::Make("tin", "x").Export());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "out of range for 64 bits",
                     ArrayFromJson(mdn.get(), "[[1, 2, 18446744073709551615]]"));
}

}  // namespace
}  // namespace ferry
