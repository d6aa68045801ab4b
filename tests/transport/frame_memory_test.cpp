// The shared-memory reader's payload memory: small frames share a slab that lives as long as
// any of them, larger ones get their own block, and every payload is 16-aligned and as long as
// asked.
#include "transport/frame_memory.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace ferry::transport::internal::shm {
namespace {

TEST(FrameMemory, SmallFramesShareASlabThatOutlivesTheReader) {
  std::vector<SharedBytes> frames;
  {
    FrameMemory memory;
    for (uint64_t size : {1, 15, 16, 17, 430, 1024}) {
      Result<SharedBytes> f = memory.Allocate(size);
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      EXPECT_EQ(f->size, static_cast<int64_t>(size));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data) % 16, 0u);
      std::memset(const_cast<uint8_t*>(f->data), static_cast<int>(size & 0xFF), size);
      frames.push_back(std::move(*f));
    }
    // One slab: one owner, and the frames follow each other, rounded to 16 bytes.
    for (const SharedBytes& f : frames) EXPECT_EQ(f.owner, frames[0].owner);
    EXPECT_EQ(frames[1].data - frames[0].data, 16);
    EXPECT_EQ(frames[3].data - frames[2].data, 16);
    EXPECT_EQ(frames[4].data - frames[3].data, 32);
  }  // the reader is gone; the frames still read what was written
  for (const SharedBytes& f : frames) {
    EXPECT_EQ(f.data[f.size - 1], static_cast<uint8_t>(f.size & 0xFF));
  }
  EXPECT_EQ(frames[0].owner.use_count(), static_cast<long>(frames.size()));
}

TEST(FrameMemory, AFullSlabIsLeftToItsFramesAndANewOneBegun) {
  FrameMemory memory;
  const uint64_t per_slab = FrameMemory::kSlabBytes / FrameMemory::kSlabFrameBytes;
  std::vector<SharedBytes> frames;
  for (uint64_t i = 0; i <= per_slab; ++i) {
    Result<SharedBytes> f = memory.Allocate(FrameMemory::kSlabFrameBytes);
    ASSERT_TRUE(f.ok());
    frames.push_back(std::move(*f));
  }
  EXPECT_EQ(frames[per_slab - 1].owner, frames[0].owner);
  EXPECT_NE(frames[per_slab].owner, frames[0].owner);
  frames.resize(1);  // the first slab now lives for its first frame alone
  EXPECT_EQ(frames[0].owner.use_count(), 1);
}

TEST(FrameMemory, LargerFramesGetABlockOfTheirOwn) {
  FrameMemory memory;
  Result<SharedBytes> small = memory.Allocate(100);
  ASSERT_TRUE(small.ok());
  for (uint64_t size : {FrameMemory::kSlabFrameBytes + 1, FrameMemory::kOwnBlockBytes,
                        FrameMemory::kOwnBlockBytes + 1}) {
    Result<SharedBytes> f = memory.Allocate(size);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->size, static_cast<int64_t>(size));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data) % 16, 0u);
    EXPECT_NE(f->owner, small->owner);
    EXPECT_EQ(f->owner.use_count(), 1);
    std::memset(const_cast<uint8_t*>(f->data), 1, size);  // every byte is writable
  }
}

}  // namespace
}  // namespace ferry::transport::internal::shm
