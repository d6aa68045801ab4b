// Mapping: anonymous and file mappings checked against what the kernel reports in
// /proc/self/maps, growth that keeps the bytes, and ownership handed out and adopted back.
#include "ferry/core/mapping.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "support/test_util.hpp"

namespace ferry {
namespace {

// The permissions /proc/self/maps shows for the mapping that holds `p` ("" when none holds it).
std::string PermissionsOf(const void* p) { return testing::MapsEntryOf(p).permissions; }

TEST(Mapping, AnonymousMemoryIsZeroedWritableAndUnmappedOnDestruction) {
  void* where = nullptr;
  {
    ASSERT_OK_AND_ASSIGN(Mapping m, Mapping::Anonymous(3 * 4096));
    ASSERT_NE(m.data(), nullptr);
    EXPECT_EQ(m.size(), 3 * 4096);
    for (int64_t i = 0; i < m.size(); i += 997) EXPECT_EQ(m.data()[i], 0);
    m.data()[5] = 42;
    where = m.data();
    EXPECT_EQ(PermissionsOf(where), "rw-p");
  }
  EXPECT_EQ(PermissionsOf(where), "");
}

TEST(Mapping, FileMappingsHonourAccessAndSharing) {
  const int fd = memfd_create("ferry-mapping-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  ASSERT_OK_AND_ASSIGN(Mapping writer, Mapping::OfFile(fd, 8192, {.shared = true}));
  ASSERT_OK_AND_ASSIGN(Mapping reader,
                       Mapping::OfFile(fd, 8192, {.access = MapAccess::kRead, .shared = true}));
  ASSERT_OK_AND_ASSIGN(Mapping guard,
                       Mapping::OfFile(fd, 8192, {.access = MapAccess::kNone, .shared = true}));
  close(fd);  // the mappings keep the memory
  EXPECT_EQ(PermissionsOf(writer.data()), "rw-s");
  EXPECT_EQ(PermissionsOf(reader.data()), "r--s");
  EXPECT_EQ(PermissionsOf(guard.data()), "---s");
  writer.data()[8191] = 7;
  EXPECT_EQ(reader.data()[8191], 7);  // shared: one memory, two views
}

TEST(Mapping, ResizeKeepsTheBytesAndMoveTransfersOwnership) {
  Mapping m;
  EXPECT_EQ(m.data(), nullptr);
  ASSERT_OK(m.Resize(4096));
  m.data()[100] = 9;
  ASSERT_OK(m.Resize(64 << 20, {.huge_pages = true}));
  EXPECT_EQ(m.size(), 64 << 20);
  EXPECT_EQ(m.data()[100], 9);
  EXPECT_EQ(m.data()[(64 << 20) - 1], 0);
  Mapping moved = std::move(m);
  EXPECT_EQ(m.data(), nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(moved.data()[100], 9);
  ASSERT_OK(moved.Resize(0));
  EXPECT_EQ(moved.data(), nullptr);
}

TEST(Mapping, ReleaseAndAdoptHandOwnershipThroughAPointer) {
  ASSERT_OK_AND_ASSIGN(Mapping m, Mapping::Anonymous(4096));
  void* p = std::move(m).Release();
  EXPECT_EQ(m.data(), nullptr);         // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(PermissionsOf(p), "rw-p");  // still mapped: the caller owns it now
  { const Mapping back = Mapping::Adopt(p, 4096); }
  EXPECT_EQ(PermissionsOf(p), "");
}

TEST(Mapping, ErrorsNameWhatAndWhy) {
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "negative size", Mapping::Anonymous(-1));
  // EBADF: the caller's descriptor is bad, an invalid argument (the errno kept as the detail).
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "cannot map 4096 bytes of the thing: Bad file descriptor",
                     Mapping::OfFile(-1, 4096, {}, "the thing"));
  ASSERT_OK_AND_ASSIGN(Mapping empty, Mapping::Anonymous(0));
  EXPECT_EQ(empty.data(), nullptr);
}

}  // namespace
}  // namespace ferry
