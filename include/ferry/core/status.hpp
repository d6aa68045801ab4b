// Status: the error value returned by every fallible call of ferry's C++ core.
#pragma once

#include <cerrno>
#include <string>
#include <utility>

namespace ferry {

/// An outcome: OK, or an errno-style code with a message naming what was wrong and where.
/// The C surface passes `code()` through unchanged, so codes are errno values (EINVAL, ENOMEM,
/// ENOTSUP, EIO, ERANGE, ENOENT, ...). Cheap when OK (no allocation).
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(int code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() noexcept { return {}; }
  /// The input is malformed or inconsistent (EINVAL).
  static Status Invalid(std::string msg) { return {EINVAL, std::move(msg)}; }
  /// The operation or combination is not supported (ENOTSUP).
  static Status NotSupported(std::string msg) { return {ENOTSUP, std::move(msg)}; }
  /// An allocation failed (ENOMEM).
  static Status OutOfMemory(std::string msg) { return {ENOMEM, std::move(msg)}; }
  /// An index or size is out of range (ERANGE).
  static Status OutOfRange(std::string msg) { return {ERANGE, std::move(msg)}; }
  /// Reading or writing bytes failed (EIO).
  static Status IOError(std::string msg) { return {EIO, std::move(msg)}; }
  /// A named thing does not exist (ENOENT).
  static Status NotFound(std::string msg) { return {ENOENT, std::move(msg)}; }

  bool ok() const noexcept { return code_ == 0; }
  int code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  /// A copy of this status whose message is prefixed with `context` and ": ".
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return {code_, context + ": " + message_};
  }
  /// "OK" or the message, for logs and test failures.
  std::string ToString() const { return ok() ? std::string("OK") : message_; }

 private:
  int code_ = 0;
  std::string message_;
};

}  // namespace ferry

/// Return the status from the enclosing function if it is not OK.
#define FERRY_RETURN_NOT_OK(expr)          \
  do {                                     \
    ::ferry::Status _ferry_st = (expr);    \
    if (!_ferry_st.ok()) return _ferry_st; \
  } while (false)

#define FERRY_CONCAT_INNER(a, b) a##b
#define FERRY_CONCAT(a, b) FERRY_CONCAT_INNER(a, b)
