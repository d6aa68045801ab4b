// Bitmap popcount against a bit-by-bit count, across offsets and lengths that cross word edges.
#include "ferry/format/bits.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace ferry::internal {
namespace {

TEST(CountSetBits, MatchesANaiveCount) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> bits(1024);
  for (auto& b : bits) b = static_cast<uint8_t>(rng());
  for (int64_t offset : {0, 1, 7, 8, 63, 64, 65, 200}) {
    for (int64_t length : {0, 1, 5, 63, 64, 65, 255, 256, 257, 1000, 7000}) {
      int64_t naive = 0;
      for (int64_t i = offset; i < offset + length; ++i) naive += GetBit(bits.data(), i);
      EXPECT_EQ(CountSetBits(bits.data(), offset, length), naive)
          << "offset " << offset << " length " << length;
    }
  }
}

}  // namespace
}  // namespace ferry::internal
