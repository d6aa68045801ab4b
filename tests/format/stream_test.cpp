// ArrowArrayStream producers and the C++ consumer.
#include "ferry/format/stream.hpp"

#include <gtest/gtest.h>

#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

UniqueArray Ints(const ArrowSchema* schema, const char* json) {
  auto a = ArrayFromJson(schema, json);
  EXPECT_TRUE(a.ok()) << a.status().message();
  return std::move(a).ValueOrDie();
}

TEST(ArrayStream, YieldsArraysThenTheEnd) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("l", "x").Export());
  std::vector<UniqueArray> arrays;
  arrays.push_back(Ints(schema.get(), "[1, 2]"));
  arrays.push_back(Ints(schema.get(), "[3]"));
  ASSERT_OK_AND_ASSIGN(UniqueSchema copy, CopySchema(schema.get()));
  ASSERT_OK_AND_ASSIGN(UniqueArrayStream stream,
                       MakeArrayStream(std::move(copy), std::move(arrays)));
  ASSERT_OK_AND_ASSIGN(ArrayStreamReader reader, ArrayStreamReader::Open(stream.get()));
  EXPECT_FALSE(stream.valid());  // the reader owns it now
  EXPECT_STREQ(reader.schema()->format, "l");
  std::vector<std::string> seen;
  for (auto& item : reader) {
    ASSERT_OK(item.status());
    seen.push_back(testing::ToJson(item->view()));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"[1, 2]", "[3]"}));
  ASSERT_OK_AND_ASSIGN(std::optional<Array> after, reader.Next());
  EXPECT_FALSE(after.has_value());  // the end stays the end
}

TEST(ArrayStream, SourceErrorsPassThroughGetLastError) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("l", "x").Export());
  int calls = 0;
  ArraySource source = [&]() -> Result<std::optional<UniqueArray>> {
    if (++calls == 2) return Status::IOError("disk on fire at batch 2");
    return std::optional<UniqueArray>(Ints(schema.get(), "[1]"));
  };
  ASSERT_OK_AND_ASSIGN(UniqueSchema copy, CopySchema(schema.get()));
  ASSERT_OK_AND_ASSIGN(UniqueArrayStream stream, MakeArrayStream(std::move(copy), source));
  ArrowArray out{};
  EXPECT_EQ(stream->get_next(stream.get(), &out), 0);
  ASSERT_NE(out.release, nullptr);
  out.release(&out);
  EXPECT_EQ(stream->get_next(stream.get(), &out), EIO);
  EXPECT_EQ(out.release, nullptr);
  EXPECT_STREQ(stream->get_last_error(stream.get()), "disk on fire at batch 2");
}

TEST(ArrayStream, RejectsReleasedInputs) {
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "stream schema is released",
                     MakeArrayStream(UniqueSchema(), std::vector<UniqueArray>{}));
  ArrowArrayStream released{};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "stream is released",
                     ArrayStreamReader::Open(&released));
}

}  // namespace
}  // namespace ferry
