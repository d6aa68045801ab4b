// SharedBytes: borrowed, copied, gathered and mapped bytes, with their owners' lifetimes.
#include "ferry/core/bytes.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "support/test_util.hpp"

namespace ferry {
namespace {

TEST(SharedBytes, GatherJoinsPiecesIntoOneAlignedCopy) {
  const std::string a = "dissoc", b = "", c = "iated";
  const ByteSpan pieces[] = {{a.data(), 6}, {b.data(), 0}, {c.data(), 5}};
  ASSERT_OK_AND_ASSIGN(SharedBytes joined, SharedBytes::Gather(pieces));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(joined.data), joined.size), "dissociated");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(joined.data) % 64, 0u);
  EXPECT_NE(joined.owner, nullptr);
  const SharedBytes tail = joined.Slice(6, 5);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(tail.data), tail.size), "iated");
  EXPECT_EQ(tail.owner, joined.owner);  // a slice shares, never copies
}

TEST(SharedBytes, GatherNamesABadPiece) {
  const ByteSpan pieces[] = {{"ok", 2}, {nullptr, 3}};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "piece 1 is NULL", SharedBytes::Gather(pieces));
  const ByteSpan negative[] = {{"ok", -1}};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "piece 0", SharedBytes::Gather(negative));
}

TEST(SharedBytes, BorrowHasNoOwnerAndCopyHasOne) {
  char text[] = "abc";
  const SharedBytes borrowed = SharedBytes::Borrow({text, 3});
  EXPECT_EQ(borrowed.owner, nullptr);
  EXPECT_EQ(borrowed.data, reinterpret_cast<const uint8_t*>(text));
  ASSERT_OK_AND_ASSIGN(SharedBytes copied, SharedBytes::Copy({text, 3}));
  text[0] = 'z';
  EXPECT_EQ(copied.data[0], 'a');
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "negative size", SharedBytes::Copy({text, -2}));
}

TEST(ByteSpan, ConvertsFromAndToStdSpan) {
  const std::vector<uint8_t> v{1, 2, 3};
  const ByteSpan from_vector = v;  // borrowed: no copy
  EXPECT_EQ(from_vector.data, v.data());
  EXPECT_EQ(from_vector.size, 3);
  const std::span<const uint8_t> span = from_vector;  // a range, so a std::span of it
  EXPECT_EQ(span.data(), v.data());
  EXPECT_EQ(span.size(), 3u);
  const ByteSpan tail = span.subspan(1);
  EXPECT_EQ(tail.data, v.data() + 1);
  EXPECT_EQ(tail.size, 2);
  EXPECT_EQ(std::vector<uint8_t>(tail.begin(), tail.end()), (std::vector<uint8_t>{2, 3}));
  const uint8_t raw[4] = {};
  EXPECT_EQ(ByteSpan(raw).size, 4);
}

TEST(SharedBytes, PassesAsAByteSpanWithoutCopying) {
  ASSERT_OK_AND_ASSIGN(SharedBytes owned, SharedBytes::Copy(std::vector<uint8_t>{7, 8}));
  const ByteSpan borrowed = owned;
  EXPECT_EQ(borrowed.data, owned.data);
  EXPECT_EQ(borrowed.size, 2);
  const auto span = static_cast<std::span<const uint8_t>>(owned);
  EXPECT_EQ(span.data(), owned.data);
  EXPECT_EQ(span.size(), 2u);
  EXPECT_EQ(SharedBytes::Borrow(owned).data, owned.data);
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
