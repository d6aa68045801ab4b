// The server's allocator of type-1 bodies in its shared region: first fit in 64-byte steps,
// neighbours coalesced on free (checked by offsets worked out by hand), a block that can never
// fit refused at once, a full region's wait ending at its deadline, and the region whole again
// after many rounds of allocating and freeing.
#include "dipc/region_allocator.hpp"

#include <random>
#include <vector>

#include "support/clock_util.hpp"
#include "support/test_util.hpp"

namespace ferry::dipc::internal {
namespace {

using namespace std::chrono_literals;

// Where an allocation that must not wait landed, or -1 (with the failure) if it found no room.
int64_t At(RegionAllocator& a, int64_t size) {
  Result<int64_t> r = a.Allocate(size, 0ms);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : -1;
}

TEST(RegionAllocator, FirstFitInSixtyFourByteStepsCoalescedOnFree) {
  RegionAllocator a(1024, Clock::Real());
  EXPECT_EQ(At(a, 100), 0);  // 128 bytes
  EXPECT_EQ(At(a, 64), 128);
  EXPECT_EQ(At(a, 1), 192);
  EXPECT_EQ(a.in_use(), 256);
  EXPECT_TRUE(a.Free(128));
  EXPECT_FALSE(a.Free(128)) << "a block freed twice";
  EXPECT_FALSE(a.Free(64)) << "an offset inside a block";
  EXPECT_EQ(At(a, 10), 128);  // the hole, first
  EXPECT_EQ(At(a, 64), 256);
  // Freed out of order, the blocks join their neighbours on both sides into one free block.
  EXPECT_TRUE(a.Free(128));
  EXPECT_TRUE(a.Free(0));
  EXPECT_TRUE(a.Free(256));
  EXPECT_TRUE(a.Free(192));
  EXPECT_EQ(a.in_use(), 0);
  EXPECT_EQ(At(a, 1024), 0);
}

TEST(RegionAllocator, ABlockThatCanNeverFitOrFindsNoRoomIsAnErrorSayingSo) {
  auto clock = std::make_shared<ManualClock>();
  RegionAllocator a(1024, clock);
  ASSERT_RAISES_WITH(StatusCode::kResourceExhausted,
                     "a body of 1025 bytes can never fit the shared region of 1024 bytes",
                     a.Allocate(1025, 1h));
  EXPECT_EQ(At(a, 1000), 0);
  ASSERT_RAISES_WITH(
      StatusCode::kDeadlineExceeded,
      "no room for a body of 64 bytes in the shared region within 30000 ms (1024 "
      "of 1024 bytes are waiting for free_data)",
      testing::AtTheDeadline(*clock, 30s, [&] { return a.Allocate(64, 30s).status(); }));
}

TEST(RegionAllocator, TheRegionIsWholeAgainAfterManyRounds) {
  RegionAllocator a(1 << 16, Clock::Real());
  std::mt19937 random(7);
  std::vector<int64_t> held;
  for (int round = 0; round < 5000; ++round) {
    if (!held.empty() && (held.size() > 40 || random() % 2 == 0)) {
      const size_t k = random() % held.size();
      ASSERT_TRUE(a.Free(held[k]));
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      Result<int64_t> at = a.Allocate(1 + static_cast<int64_t>(random() % 1500), 0ms);
      if (at.ok()) held.push_back(*at);
    }
  }
  for (int64_t at : held) ASSERT_TRUE(a.Free(at));
  EXPECT_EQ(a.in_use(), 0);
  EXPECT_EQ(At(a, 1 << 16), 0);
}

}  // namespace
}  // namespace ferry::dipc::internal
