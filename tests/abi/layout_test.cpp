// Pins the Arrow C ABI layouts from C++ and checks the Unique<T> owners' move/release contract.
#include <gtest/gtest.h>

#include "dlpack_layout_check.h"
#include "ferry/abi/unique.hpp"
#include "layout_check.h"

namespace ferry {
namespace {

int g_releases = 0;
void CountingRelease(ArrowArray* array) {
  ++g_releases;
  array->release = nullptr;
}

TEST(UniqueArray, MovingMarksTheSourceReleasedAndReleasesOnce) {
  g_releases = 0;
  ArrowArray raw{};
  raw.length = 7;
  raw.release = &CountingRelease;
  {
    UniqueArray owner(&raw);
    EXPECT_EQ(raw.release, nullptr) << "taking ownership must mark the source released";
    UniqueArray moved(std::move(owner));
    EXPECT_FALSE(owner.valid());
    EXPECT_TRUE(moved.valid());
    EXPECT_EQ(moved->length, 7);
    UniqueArray assigned;
    assigned = std::move(moved);
    EXPECT_FALSE(moved.valid());
    EXPECT_EQ(g_releases, 0);
  }
  EXPECT_EQ(g_releases, 1);
}

TEST(UniqueArray, MoveToHandsOverWithoutRelease) {
  g_releases = 0;
  ArrowArray raw{};
  raw.release = &CountingRelease;
  UniqueArray owner(&raw);
  ArrowArray out{};
  owner.move_to(&out);
  EXPECT_FALSE(owner.valid());
  owner.reset();
  EXPECT_EQ(g_releases, 0);
  out.release(&out);
  EXPECT_EQ(g_releases, 1);
}

TEST(UniqueDeviceArray, ReleasesTheInnerArray) {
  g_releases = 0;
  {
    ArrowDeviceArray raw{};
    raw.array.release = &CountingRelease;
    raw.device_type = ARROW_DEVICE_CPU;
    UniqueDeviceArray owner(&raw);
    EXPECT_EQ(raw.array.release, nullptr);
  }
  EXPECT_EQ(g_releases, 1);
}

}  // namespace
}  // namespace ferry
