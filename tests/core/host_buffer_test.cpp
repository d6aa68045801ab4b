// HostBuffer and the allocator contract, checked by hand.
#include "ferry/core/host_buffer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/counting_allocator.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

TEST(HostBuffer, AlignedGrowingAndZeroPadded) {
  HostBuffer b;
  ASSERT_OK(b.Append<int32_t>(7));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  EXPECT_EQ(b.size(), 4);
  EXPECT_EQ(b.capacity() % 64, 0);
  for (int i = 0; i < 1000; ++i) ASSERT_OK(b.Append<int32_t>(i));
  EXPECT_EQ(b.size(), 4004);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  int32_t last;
  std::memcpy(&last, b.data() + 4000, 4);
  EXPECT_EQ(last, 999);
  for (int64_t i = b.size(); i < b.capacity(); ++i) EXPECT_EQ(b.data()[i], 0) << i;
  HostBuffer moved = std::move(b);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(moved.size(), 4004);
}

TEST(HostBuffer, NegativeSizesAreErrors) {
  HostBuffer b;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "negative buffer capacity", b.Reserve(-1));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "negative size", b.Append({"x", -1}));
}

TEST(HostBuffer, AppendTakesARangeOfBytesAsItsBytes) {
  HostBuffer b;
  const std::vector<uint8_t> bytes{1, 2, 3};
  ASSERT_OK(b.Append(bytes));  // the vector's bytes, not the vector object
  ASSERT_OK(b.Append({bytes.data() + 2, 1}));
  ASSERT_EQ(b.size(), 4);
  EXPECT_EQ(std::vector<uint8_t>(b.data(), b.data() + 4), (std::vector<uint8_t>{1, 2, 3, 3}));
}

}  // namespace
}  // namespace ferry
