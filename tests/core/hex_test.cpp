// Hex: the one way messages print tags and addresses, checked against printf's own formatting.
#include "ferry/core/hex.hpp"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>

namespace ferry {
namespace {

TEST(Hex, PrintsSixteenLowercaseDigitsAfter0x) {
  EXPECT_EQ(Hex(0), "0x0000000000000000");
  EXPECT_EQ(Hex(0x0100000000000007ULL), "0x0100000000000007");
  EXPECT_EQ(Hex(UINT64_MAX), "0xffffffffffffffff");
  for (uint64_t v : {uint64_t{1}, uint64_t{0xabcdef}, uint64_t{0x8000000000000000ULL},
                     uint64_t{0x00e0000000000002ULL}, uint64_t{0x1122334455667788ULL}}) {
    char expected[24];
    std::snprintf(expected, sizeof(expected), "0x%016" PRIx64, v);
    EXPECT_EQ(Hex(v), expected);
  }
}

}  // namespace
}  // namespace ferry
