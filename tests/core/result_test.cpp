// Result<T>: a value or the Status that explains its absence; asking an error for its value
// aborts with the Status's message instead of reading an empty value.
#include "ferry/core/result.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace ferry {
namespace {

TEST(Result, HoldsAValueOrAStatus) {
  Result<std::string> good(std::string("ferry"));
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good.value(), "ferry");
  EXPECT_EQ(*good, "ferry");
  EXPECT_EQ(good->size(), 5u);
  Result<std::string> bad(Status::NotFound("no flight named taxi"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  // An OK status is no value: the Result says so instead of pretending.
  Result<int> confused(Status::OK());
  ASSERT_FALSE(confused.ok());
  EXPECT_EQ(confused.status().code(), StatusCode::kInvalidArgument);
}

TEST(Result, ValueOrDieMovesTheValueOut) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(7));
  std::unique_ptr<int> p = std::move(r).ValueOrDie();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
}

TEST(ResultDeathTest, AskingAnErrorForItsValueAbortsWithTheMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Result<int> r(Status::Invalid("offset 9 lies outside the allocation"));
        (void)std::move(r).ValueOrDie();
      },
      "a Result without a value was asked for one: offset 9 lies outside the allocation");
  EXPECT_DEATH(
      {
        Result<std::string> r(Status::IOError("disk on fire"));
        (void)r.value();
      },
      "disk on fire");
}

}  // namespace
}  // namespace ferry
