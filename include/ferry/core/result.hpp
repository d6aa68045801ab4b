// Result<T>: a value or the Status that explains why there is none.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

#include "ferry/core/status.hpp"

namespace ferry {

namespace internal {
/// What value() and ValueOrDie() do on an error: print the Status and abort, rather than read an
/// empty value (which would hand the caller garbage).
[[noreturn]] inline void DieWithoutValue(const Status& status) noexcept {
  std::fprintf(stderr, "ferry: a Result without a value was asked for one: %s\n",
               status.message().c_str());
  std::abort();
}
}  // namespace internal

/// A T on success, otherwise a non-OK Status. Move-friendly; holds T by value.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Status::Invalid("Result built from an OK status without a value");
  }

  bool ok() const noexcept { return value_.has_value(); }
  const Status& status() const noexcept { return status_; }

  /// The value; on an error, prints the Status and aborts (one branch). Library code checks
  /// ok() or uses FERRY_ASSIGN_OR_RAISE instead; examples, tests and tools may call these.
  T& value() & {
    if (!ok()) internal::DieWithoutValue(status_);
    return *value_;
  }
  const T& value() const& {
    if (!ok()) internal::DieWithoutValue(status_);
    return *value_;
  }
  T&& value() && {
    if (!ok()) internal::DieWithoutValue(status_);
    return std::move(*value_);
  }
  /// The value, moved out; on an error, prints the Status and aborts.
  T ValueOrDie() && {
    if (!ok()) internal::DieWithoutValue(status_);
    return std::move(*value_);
  }
  /// Unchecked access: only after ok() returned true.
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ferry

// `tmp` and `lhs` name a variable and a declaration, so they cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define FERRY_ASSIGN_OR_RAISE_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                               \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

/// Evaluate a Result expression; on error return its Status, else assign its value to `lhs`.
#define FERRY_ASSIGN_OR_RAISE(lhs, rexpr) \
  FERRY_ASSIGN_OR_RAISE_IMPL(FERRY_CONCAT(_ferry_res_, __LINE__), lhs, rexpr)
