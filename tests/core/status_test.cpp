// Status: one pointer, NULL when OK. Its code, message and errno detail survive copies and moves;
// a copy of a failure is a deep one, so the two live apart; a FixedStatus is handed out without
// allocating, which a poll that finds nothing relies on.
#include "ferry/core/status.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <utility>

#include "support/allocation_count.hpp"

namespace ferry {
namespace {

TEST(Status, AnOkStatusSaysOkAndCarriesNothing) {
  const Status ok = Status::OK();
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), StatusCode::kOk);
  EXPECT_EQ(ok.os_error(), 0);
  EXPECT_EQ(ok.message(), "");
  EXPECT_EQ(ok.ToString(), "OK");
  EXPECT_TRUE(ok.WithContext("message 3").ok());
  // kOk with words is still OK: ok() and code() never disagree.
  const Status odd(StatusCode::kOk, "all is well");
  EXPECT_TRUE(odd.ok());
  EXPECT_EQ(odd.message(), "");
  EXPECT_EQ(sizeof(Status), sizeof(void*));
}

TEST(Status, AFailureKeepsItsCodeMessageAndErrnoThroughCopiesAndMoves) {
  const Status failed(StatusCode::kIOError, "reading /tmp/x: no space left", ENOSPC);
  Status copy = failed;
  EXPECT_EQ(copy.code(), StatusCode::kIOError);
  EXPECT_EQ(copy.message(), "reading /tmp/x: no space left");
  EXPECT_EQ(copy.os_error(), ENOSPC);
  EXPECT_NE(&copy.message(), &failed.message());  // a deep copy: each owns its words

  Status moved = std::move(copy);
  EXPECT_EQ(moved.message(), "reading /tmp/x: no space left");
  EXPECT_TRUE(copy.ok());  // NOLINT(bugprone-use-after-move): a moved-from status is OK

  Status assigned = Status::NotFound("no flight named taxi");
  assigned = moved;
  EXPECT_EQ(assigned.code(), StatusCode::kIOError);
  assigned = Status::OK();
  EXPECT_TRUE(assigned.ok());
  assigned = std::move(moved);
  EXPECT_EQ(assigned.os_error(), ENOSPC);

  const Status wrapped = failed.WithContext(std::string("message 7"));
  EXPECT_EQ(wrapped.message(), "message 7: reading /tmp/x: no space left");
  EXPECT_EQ(wrapped.code(), StatusCode::kIOError);
  EXPECT_EQ(wrapped.os_error(), ENOSPC);
  EXPECT_EQ(failed.message(), "reading /tmp/x: no space left");  // the original is untouched
}

TEST(Status, AFixedStatusIsSharedAndNeverCopied) {
  static const FixedStatus kNothing(StatusCode::kDeadlineExceeded, "timed out");
  const Status a = kNothing.status();
  const Status b = a;  // NOLINT(performance-unnecessary-copy-initialization): the copy is tested
  EXPECT_EQ(a.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(b.message(), "timed out");
  EXPECT_EQ(&a.message(), &b.message());
  // A fixed failure may not say OK: it would be a failure that ok() calls a success.
  static const FixedStatus kConfused(StatusCode::kOk, "fine");
  EXPECT_FALSE(kConfused.status().ok());
  EXPECT_EQ(kConfused.status().code(), StatusCode::kInternal);
}

#if FERRY_COUNT_ALLOCATIONS
TEST(Status, OkAndFixedStatusesAllocateNothing) {
  static const FixedStatus kNothing(StatusCode::kDeadlineExceeded, "timed out");
  const int64_t before = testing::allocations;
  for (int i = 0; i < 100; ++i) {
    Status ok = Status::OK();
    Status look = kNothing.status();
    Status copy = look;
    Status moved = std::move(copy);
    ok = std::move(moved);
    EXPECT_FALSE(ok.ok());
  }
  EXPECT_EQ(testing::allocations - before, 0);
  // A failure of its own allocates its details once; moving it allocates nothing more.
  const int64_t at = testing::allocations;
  Status failed = Status::Invalid("offset 9 lies outside the allocation");
  Status moved = std::move(failed);
  EXPECT_EQ(testing::allocations - at, 2);  // the details, and the message beyond the string's room
  EXPECT_FALSE(moved.ok());
}
#endif

}  // namespace
}  // namespace ferry
