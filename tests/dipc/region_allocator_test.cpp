// The server's allocator of type-1 bodies in its shared region: first fit in 64-byte steps,
// neighbours coalesced on free (checked by offsets worked out by hand), a block freed twice or
// running into free space refused, a block that can never fit refused at once, a full region's
// wait ending at its deadline, and the region whole again after many rounds of allocating and
// freeing. The region memory handed to producers frees only what it handed out, at the size it
// handed out.
#include "dipc/region_allocator.hpp"

#include <algorithm>
#include <random>
#include <string>
#include <utility>
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
  EXPECT_TRUE(a.Free(128, 64));
  EXPECT_EQ(a.free_spans(), 2u);  // [128, 192) and [256, 1024)
  EXPECT_EQ(At(a, 10), 128);      // the hole, first
  EXPECT_EQ(At(a, 64), 256);
  EXPECT_EQ(a.free_spans(), 1u);  // [320, 1024)
  // Freed out of order, the blocks join their neighbours on both sides into one free block.
  EXPECT_TRUE(a.Free(128, 10));
  EXPECT_TRUE(a.Free(0, 100));
  EXPECT_EQ(a.free_spans(), 2u);  // [0, 192) and [320, 1024)
  EXPECT_TRUE(a.Free(256, 64));
  EXPECT_EQ(a.free_spans(), 2u);  // [0, 192) and [256, 1024)
  EXPECT_TRUE(a.Free(192, 1));
  EXPECT_EQ(a.free_spans(), 1u);
  EXPECT_EQ(a.in_use(), 0);
  EXPECT_EQ(At(a, 1024), 0);
}

TEST(RegionAllocator, ABlockFreedTwiceOrRunningIntoFreeSpaceIsRefusedAndChangesNothing) {
  RegionAllocator a(1024, Clock::Real());
  EXPECT_EQ(At(a, 128), 0);
  EXPECT_EQ(At(a, 128), 128);
  EXPECT_EQ(At(a, 128), 256);  // [384, 1024) free
  EXPECT_TRUE(a.Free(128, 128));
  EXPECT_FALSE(a.Free(128, 128)) << "a block freed twice";
  EXPECT_FALSE(a.Free(192, 64)) << "a block inside free space";
  EXPECT_FALSE(a.Free(0, 192)) << "a block running into the free space after it";
  EXPECT_FALSE(a.Free(256, 192)) << "a block running into the region's free tail";
  EXPECT_FALSE(a.Free(32, 64)) << "an offset off the 64-byte steps";
  EXPECT_FALSE(a.Free(960, 128)) << "a block past the region's end";
  EXPECT_FALSE(a.Free(-64, 64)) << "a negative offset";
  EXPECT_EQ(a.in_use(), 256);
  EXPECT_EQ(a.free_spans(), 2u);
  EXPECT_TRUE(a.Free(0, 128));
  EXPECT_TRUE(a.Free(256, 128));
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
  std::vector<std::pair<int64_t, int64_t>> held;  // offset, size
  // Each held block's bytes are marked with its number: two blocks given the same bytes would
  // show as a mark overwritten.
  std::vector<int> owner(1 << 16, -1);
  for (int round = 0; round < 5000; ++round) {
    if (!held.empty() && (held.size() > 40 || random() % 2 == 0)) {
      const size_t k = random() % held.size();
      const auto [at, size] = held[k];
      for (int64_t i = at; i < at + size; ++i) ASSERT_EQ(owner[static_cast<size_t>(i)], at);
      std::fill_n(owner.begin() + at, size, -1);
      ASSERT_TRUE(a.Free(at, size));
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      const int64_t size = 1 + static_cast<int64_t>(random() % 1500);
      Result<int64_t> at = a.Allocate(size, 0ms);
      if (!at.ok()) continue;
      for (int64_t i = *at; i < *at + size; ++i) ASSERT_EQ(owner[static_cast<size_t>(i)], -1);
      std::fill_n(owner.begin() + *at, size, static_cast<int>(*at));
      held.emplace_back(*at, size);
    }
  }
  for (const auto& [at, size] : held) ASSERT_TRUE(a.Free(at, size));
  EXPECT_EQ(a.in_use(), 0);
  EXPECT_EQ(At(a, 1 << 16), 0);
}

// A region in this process's memory, for the region memory's test.
class HeapRegion final : public transport::Region {
 public:
  explicit HeapRegion(int64_t size) : bytes_(static_cast<size_t>(size)) {}
  uint8_t* data() const noexcept override { return const_cast<uint8_t*>(bytes_.data()); }
  int64_t size() const noexcept override { return static_cast<int64_t>(bytes_.size()); }
  uint64_t WireAddress(int64_t offset) const noexcept override {
    return static_cast<uint64_t>(offset);
  }
  std::string remote_handle() const override { return {}; }

 private:
  std::vector<uint8_t> bytes_;
};

TEST(RegionMemory, FreesOnlyWhatItHandedOutAtTheSizeItHandedOut) {
  auto region = std::make_shared<HeapRegion>(1024);
  auto allocator = std::make_shared<RegionAllocator>(1024, Clock::Real());
  std::shared_ptr<Allocator> memory = MakeRegionMemory(region, allocator, 0ms);
  ASSERT_OK_AND_ASSIGN(uint8_t * first, memory->Allocate(100));  // 128 bytes
  ASSERT_OK_AND_ASSIGN(uint8_t * second, memory->Allocate(64));
  EXPECT_EQ(first, region->data());
  EXPECT_EQ(second, region->data() + 128);
  EXPECT_EQ(allocator->in_use(), 192);
  memory->Free(region->data() + 64, 64);  // never handed out: inside the first block
  EXPECT_EQ(allocator->in_use(), 192);
  memory->Free(first, 1000);  // a wrong size: the block's own is freed
  EXPECT_EQ(allocator->in_use(), 64);
  memory->Free(first, 100);  // twice
  EXPECT_EQ(allocator->in_use(), 64);
  EXPECT_EQ(allocator->free_spans(), 2u);
  memory->Free(second, 64);
  EXPECT_EQ(allocator->in_use(), 0);
  EXPECT_EQ(allocator->free_spans(), 1u);
}

}  // namespace
}  // namespace ferry::dipc::internal
