// The builders' exact bytes, checked by hand.
#include "ferry/format/builder.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "ferry/format/schema.hpp"
#include "support/counting_allocator.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

TEST(Builder, StringBytesByHand) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("u", "s").Export());
  ASSERT_OK_AND_ASSIGN(auto b, ArrayBuilder::Make(schema.get()));
  ASSERT_OK(b->AppendBytes("a"));
  ASSERT_OK(b->AppendNull());
  ASSERT_OK(b->AppendBytes("bcd"));
  ASSERT_OK_AND_ASSIGN(UniqueArray a, b->Finish());
  EXPECT_EQ(a->length, 3);
  EXPECT_EQ(a->null_count, 1);
  ASSERT_EQ(a->n_buffers, 3);
  EXPECT_EQ(static_cast<const uint8_t*>(a->buffers[0])[0] & 0x7, 0b101);
  const auto* offsets = static_cast<const int32_t*>(a->buffers[1]);
  EXPECT_EQ(std::vector<int32_t>(offsets, offsets + 4), (std::vector<int32_t>{0, 1, 1, 4}));
  EXPECT_EQ(std::memcmp(a->buffers[2], "abcd", 4), 0);
}

TEST(Builder, ViewsInlineAndOutOfLine) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("vz", "v").Export());
  ASSERT_OK_AND_ASSIGN(auto b, ArrayBuilder::Make(schema.get()));
  ASSERT_OK(b->AppendBytes("short"));
  ASSERT_OK(b->AppendBytes("a value of 21 bytes!!"));
  ASSERT_OK_AND_ASSIGN(UniqueArray a, b->Finish());
  ASSERT_EQ(a->n_buffers, 4);  // validity, views, one data buffer, sizes
  EXPECT_EQ(a->buffers[0], nullptr);
  const auto* views = static_cast<const uint8_t*>(a->buffers[1]);
  int32_t len0, len1, index1, offset1;
  std::memcpy(&len0, views, 4);
  std::memcpy(&len1, views + 16, 4);
  std::memcpy(&index1, views + 24, 4);
  std::memcpy(&offset1, views + 28, 4);
  EXPECT_EQ(len0, 5);
  EXPECT_EQ(std::memcmp(views + 4, "short", 5), 0);
  EXPECT_EQ(len1, 21);
  EXPECT_EQ(std::memcmp(views + 20, "a va", 4), 0);  // prefix
  EXPECT_EQ(index1, 0);
  EXPECT_EQ(offset1, 0);
  EXPECT_EQ(static_cast<const int64_t*>(a->buffers[3])[0], 21);
}

TEST(Builder, HalfFloatsRoundToNearestEven) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("e", "h").Export());
  ASSERT_OK_AND_ASSIGN(auto b, ArrayBuilder::Make(schema.get()));
  for (double v : {1.0, 65504.0, -2.0, 0.1, 1e-8, 1e6, 5.960464477539063e-08})
    ASSERT_OK(b->AppendDouble(v));
  ASSERT_OK_AND_ASSIGN(UniqueArray a, b->Finish());
  const auto* h = static_cast<const uint16_t*>(a->buffers[1]);
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0x7BFF);
  EXPECT_EQ(h[2], 0xC000);
  EXPECT_EQ(h[3], 0x2E66);  // 0.1 rounds to 0.0999755859375
  EXPECT_EQ(h[4], 0x0000);  // below half the smallest subnormal
  EXPECT_EQ(h[5], 0x7C00);  // overflow to infinity
  EXPECT_EQ(h[6], 0x0001);  // the smallest subnormal
}

TEST(Builder, DecimalsParseToTwosComplement) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("d:10,3,64", "d").Export());
  ASSERT_OK_AND_ASSIGN(auto b, ArrayBuilder::Make(schema.get()));
  ASSERT_OK(b->AppendDecimal("-12.345"));
  ASSERT_OK(b->AppendDecimal("7"));
  ASSERT_OK(b->AppendDecimal("0.5"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "more fractional digits than scale 3",
                     b->AppendDecimal("1.2345"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs 11 digits but the precision is 10",
                     b->AppendDecimal("12345678.901"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unexpected 'x' at position 1",
                     b->AppendDecimal("1x"));
  ASSERT_OK_AND_ASSIGN(UniqueArray a, b->Finish());
  const auto* v = static_cast<const int64_t*>(a->buffers[1]);
  EXPECT_EQ(v[0], -12345);
  EXPECT_EQ(v[1], 7000);
  EXPECT_EQ(v[2], 500);
}

TEST(Builder, ZeroAtNegativeScale) {
  // Found by the JSON fuzzer: "-0" at scale -2 dropped every digit, then read past the string.
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("d:76,-2,256", "d").Export());
  ASSERT_OK_AND_ASSIGN(auto b, ArrayBuilder::Make(schema.get()));
  ASSERT_OK(b->AppendDecimal("-0"));
  ASSERT_OK(b->AppendDecimal("1200"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "more fractional digits than scale -2",
                     b->AppendDecimal("1210"));
  ASSERT_OK_AND_ASSIGN(UniqueArray a, b->Finish());
  const auto* limbs = static_cast<const uint64_t*>(a->buffers[1]);
  EXPECT_EQ(limbs[0], 0u);
  EXPECT_EQ(limbs[4], 12u);  // 1200 at scale -2 is 12
}

TEST(Builder, MisuseIsAClearError) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, Field::Make("i", "n").Export());
  ASSERT_OK_AND_ASSIGN(auto b, ArrayBuilder::Make(schema.get()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "expected 4 bytes for int32, got 1",
                     b->AppendBytes("x"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "cannot append a union element to a int32 builder (field \"n\")",
                     b->AppendUnion(0));
  ASSERT_RAISES_WITH(StatusCode::kOutOfRange, "value 3000000000 is out of range for int32",
                     b->AppendInt(3000000000));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "cannot append a nested element",
                     b->FinishElement());
  ASSERT_OK_AND_ASSIGN(UniqueSchema fsl,
                       Field::Make("+w:2", "f", {Field::Make("i", "x")}).Export());
  ASSERT_OK_AND_ASSIGN(auto fb, ArrayBuilder::Make(fsl.get()));
  ASSERT_OK(fb->child(0)->AppendInt(1));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "fixed-size list element 0 has 1 values, expected 2", fb->FinishElement());
}

TEST(Builder, EveryBufferIsFreedExactlyOnce) {
  CountingAllocator allocator;
  {
    Field f = Field::Make("+s", "",
                          {Field::Make("+l", "l", {Field::Make("vu", "item")}),
                           Field::Dictionary("d", "i", Field::Make("u", "v"))});
    ASSERT_OK_AND_ASSIGN(UniqueSchema schema, f.Export());
    ASSERT_OK_AND_ASSIGN(auto b, ArrayBuilder::Make(schema.get(), &allocator));
    for (int i = 0; i < 100; ++i) {
      ASSERT_OK(
          b->child(0)->child(0)->AppendBytes("a string longer than twelve " + std::to_string(i)));
      ASSERT_OK(b->child(0)->FinishElement());
      ASSERT_OK(b->child(1)->AppendBytes(i % 2 ? "odd" : "even"));
      ASSERT_OK(b->FinishElement());
    }
    ASSERT_OK_AND_ASSIGN(UniqueArray a, b->Finish());
    EXPECT_GT(allocator.live(), 0u);
    UniqueArray moved = std::move(a);  // moving hands over, releasing nothing
    EXPECT_FALSE(a.valid());
    b.reset();  // the builder's own (empty, restarted) buffers go too
  }
  EXPECT_GT(allocator.allocations(), 5);
  EXPECT_EQ(allocator.live(), 0u);
  EXPECT_EQ(allocator.bad_frees(), 0);
}

}  // namespace
}  // namespace ferry
