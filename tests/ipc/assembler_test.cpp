// The writer's body layout (AssembleBatch): each buffer starts at a multiple of the alignment and
// is padded up to the next, with offsets and lengths computed here by hand; an alignment that is
// not a power of two is refused, naming it.
#include "ipc/assembler.hpp"

#include <gtest/gtest.h>

#include "support/test_util.hpp"

namespace ferry {
namespace {

using ipc::internal::AssembleBatch;
using ipc::internal::AssembledBody;
using ipc::internal::Codec;

// Three rows of `struct<x: int32, s: utf8>` with one null x: x's bitmap (1 byte), x's values
// (12 bytes), s's offsets (16 bytes) and s's characters ("a", "bc", "": 3 bytes).
Result<Array> Batch() {
  return testing::ArrayFromJson(
      testing::BatchField({Field::Make("i", "x"), Field::Make("u", "s")}),
      R"([{"x": 1, "s": "a"}, {"x": null, "s": "bc"}, {"x": 3, "s": ""}])");
}

TEST(Assembler, BuffersArePaddedToTheAlignment) {
  ASSERT_OK_AND_ASSIGN(Array batch, Batch());
  // (offset, length) of each buffer: x's bitmap and values, s's bitmap (absent: no nulls),
  // offsets and characters.
  struct Case {
    int64_t alignment;
    std::vector<std::pair<int64_t, int64_t>> buffers;
    int64_t body_length;
  };
  const Case cases[] = {
      {8, {{0, 1}, {8, 12}, {24, 0}, {24, 16}, {40, 3}}, 48},
      {64, {{0, 1}, {64, 12}, {128, 0}, {128, 16}, {192, 3}}, 256},
  };
  for (const Case& c : cases) {
    ASSERT_OK_AND_ASSIGN(AssembledBody body, AssembleBatch(batch.schema(), batch.array(),
                                                           c.alignment, Codec::kNone, 0));
    ASSERT_EQ(body.buffers.size(), c.buffers.size()) << "alignment " << c.alignment;
    for (size_t i = 0; i < c.buffers.size(); ++i) {
      EXPECT_EQ(body.buffers[i].offset(), c.buffers[i].first) << "buffer " << i;
      EXPECT_EQ(body.buffers[i].length(), c.buffers[i].second) << "buffer " << i;
    }
    EXPECT_EQ(body.body_length, c.body_length) << "alignment " << c.alignment;
    int64_t pieces = 0;
    for (const ByteSpan& p : body.pieces) pieces += p.size;
    EXPECT_EQ(pieces, c.body_length) << "the pieces, padding included, make the whole body";
  }
}

TEST(Assembler, AnAlignmentThatIsNotAPowerOfTwoIsRefused) {
  ASSERT_OK_AND_ASSIGN(Array batch, Batch());
  for (int64_t alignment : {0, -8, 24}) {
    Result<AssembledBody> body =
        AssembleBatch(batch.schema(), batch.array(), alignment, Codec::kNone, 0);
    ASSERT_FALSE(body.ok()) << "alignment " << alignment;
    EXPECT_EQ(body.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(body.status().message().find("power of two, not " + std::to_string(alignment)),
              std::string::npos)
        << body.status().message();
  }
}

}  // namespace
}  // namespace ferry
