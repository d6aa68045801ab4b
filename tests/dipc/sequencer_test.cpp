// Reordering: any arrival order comes out in sequence order, across the UINT32_MAX wrap, with a
// bounded window and clear errors for duplicates and stale or far-ahead numbers.
#include "ferry/dipc/sequencer.hpp"

#include <algorithm>
#include <random>

#include "support/test_util.hpp"

namespace ferry::dipc {
namespace {

TEST(SequencerTest, ShuffledArrivalsComeOutInOrder) {
  std::vector<uint32_t> order(64);
  for (uint32_t i = 0; i < 64; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  Sequencer<std::string> s(64);
  std::vector<std::string> out;
  for (uint32_t seq : order) {
    ASSERT_OK(s.Put(seq, "m" + std::to_string(seq)));
    while (auto item = s.Pop()) out.push_back(*item);
  }
  ASSERT_EQ(out.size(), 64u);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(out[i], "m" + std::to_string(i));
  EXPECT_EQ(s.held(), 0u);
}

TEST(SequencerTest, WrapsAtUint32Max) {
  Sequencer<int> s(8, UINT32_MAX - 1);
  ASSERT_OK(s.Put(0, 3));  // after the wrap, arriving first
  ASSERT_OK(s.Put(UINT32_MAX, 2));
  ASSERT_OK(s.Put(UINT32_MAX - 1, 1));
  EXPECT_EQ(*s.Pop(), 1);
  EXPECT_EQ(*s.Pop(), 2);
  EXPECT_EQ(*s.Pop(), 3);
  EXPECT_EQ(s.next(), 1u);
}

TEST(SequencerTest, WindowDuplicatesAndStaleNumbersAreErrors) {
  Sequencer<int> s(4);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is 4 ahead of 0, beyond the window of 4",
                     s.Put(4, 0));
  ASSERT_OK(s.Put(2, 0));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "sequence number 2 arrived twice", s.Put(2, 0));
  ASSERT_OK(s.Put(0, 0));
  ASSERT_TRUE(s.Pop().has_value());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "sequence number 0 was already delivered",
                     s.Put(0, 0));
  EXPECT_FALSE(s.Pop().has_value());  // 1 is missing: nothing past the gap comes out
  EXPECT_EQ(s.held(), 1u);
  // The next number, whether it comes in its turn or was held from before its turn, also
  // arrives only once.
  ASSERT_OK(s.Put(1, 10));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "sequence number 1 arrived twice", s.Put(1, 0));
  EXPECT_EQ(s.held(), 2u);
  EXPECT_EQ(s.Pop(), std::optional<int>(10));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "sequence number 2 arrived twice", s.Put(2, 0));
  EXPECT_EQ(s.Pop(), std::optional<int>(0));
  EXPECT_EQ(s.held(), 0u);
}

}  // namespace
}  // namespace ferry::dipc
