// SharedBytes: borrowed, copied, gathered and mapped bytes, with their owners' lifetimes.
#include "ferry/core/bytes.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "support/test_util.hpp"

namespace ferry {
namespace {

TEST(SharedBytes, GatherJoinsPiecesIntoOneAlignedCopy) {
  const std::string a = "dissoc", b = "", c = "iated";
  const ByteSpan pieces[] = {{a.data(), 6}, {b.data(), 0}, {c.data(), 5}};
  ASSERT_OK_AND_ASSIGN(SharedBytes joined, SharedBytes::Gather(pieces, 3));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(joined.data), joined.size), "dissociated");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(joined.data) % 64, 0u);
  EXPECT_NE(joined.owner, nullptr);
  const SharedBytes tail = joined.Slice(6, 5);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(tail.data), tail.size), "iated");
  EXPECT_EQ(tail.owner, joined.owner);  // a slice shares, never copies
}

TEST(SharedBytes, GatherNamesABadPiece) {
  const ByteSpan pieces[] = {{"ok", 2}, {nullptr, 3}};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "piece 1 is NULL",
                     SharedBytes::Gather(pieces, 2));
  const ByteSpan negative[] = {{"ok", -1}};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "piece 0", SharedBytes::Gather(negative, 1));
}

TEST(SharedBytes, BorrowHasNoOwnerAndCopyHasOne) {
  char text[] = "abc";
  const SharedBytes borrowed = SharedBytes::Borrow(text, 3);
  EXPECT_EQ(borrowed.owner, nullptr);
  EXPECT_EQ(borrowed.data, reinterpret_cast<const uint8_t*>(text));
  ASSERT_OK_AND_ASSIGN(SharedBytes copied, SharedBytes::Copy(text, 3));
  text[0] = 'z';
  EXPECT_EQ(copied.data[0], 'a');
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "negative size", SharedBytes::Copy(text, -2));
}

TEST(SharedBytes, MapFileReadsTheFileAndNamesMissingOnes) {
  char path[] = "/tmp/ferry-bytes-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "mapped bytes", 12), 12);
  close(fd);
  {
    ASSERT_OK_AND_ASSIGN(SharedBytes mapped, SharedBytes::MapFile(path));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(mapped.data), mapped.size), "mapped bytes");
  }
  std::remove(path);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, path, SharedBytes::MapFile(path));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "not a regular file",
                     SharedBytes::MapFile("/tmp"));
}

}  // namespace
}  // namespace ferry
