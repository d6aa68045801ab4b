// Status: the error value returned by every fallible call of ferry's C++ core.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "ferry/abi/export.h"

namespace ferry {

/// What kind of failure a Status reports: a closed set in the style of Arrow's StatusCode and
/// absl's canonical codes. `ferry/core/status_code.hpp` holds the one table that maps each code
/// onto the C API's return code, gRPC, Python and Ruby.
enum class StatusCode : uint8_t {
  kOk = 0,
  /// The input is malformed or inconsistent: bad arguments, bad bytes, lying lengths.
  kInvalidArgument,
  /// A named thing (file, flight, ticket, dataset, device) does not exist.
  kNotFound,
  /// What would be created exists already.
  kAlreadyExists,
  /// The operation is refused in the current state (a flight being read, a schema that differs).
  kFailedPrecondition,
  /// An index, offset or size lies outside its range.
  kOutOfRange,
  /// A peer or service cannot be reached or went away; trying again later may succeed.
  kUnavailable,
  /// A bounded wait ended before what it waited for happened.
  kDeadlineExceeded,
  /// The operation was cancelled, by the caller or the peer.
  kCancelled,
  /// The caller may not do this (file permissions, a refused mapping).
  kPermissionDenied,
  /// The caller did not prove who it is (a missing or wrong token).
  kUnauthenticated,
  /// Memory, a quota or a size limit ran out.
  kResourceExhausted,
  /// Data was lost or corrupted past recovery (a body that changed under its reader).
  kDataLoss,
  /// ferry does not implement this operation, type or combination.
  kUnimplemented,
  /// An invariant of ferry's own was broken: a bug, reported instead of crashing.
  kInternal,
  /// Reading or writing bytes failed (a file, a socket, a device copy).
  kIOError,
};

/// An outcome: OK, or a StatusCode with a message naming what was wrong and where. Where the
/// operating system gave an errno, it is kept as a detail (`os_error()`) for messages and logs;
/// code decides on `code()`. Cheap when OK (no allocation).
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(StatusCode code, std::string message, int os_error = 0)
      : code_(code), os_error_(os_error), message_(std::move(message)) {}

  static Status OK() noexcept { return {}; }
  /// The failure an errno names: its code from the table (ENOENT is kNotFound, ...), the errno
  /// kept as the detail, and "`what`: strerror(err)" as the message.
  FERRY_EXPORT static Status FromErrno(int err, const std::string& what);

  /// The input is malformed or inconsistent (kInvalidArgument).
  static Status Invalid(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  /// A named thing does not exist (kNotFound).
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  /// What would be created exists already (kAlreadyExists).
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  /// Refused in the current state (kFailedPrecondition).
  static Status FailedPrecondition(std::string msg) {
    return {StatusCode::kFailedPrecondition, std::move(msg)};
  }
  /// An index or size is out of range (kOutOfRange).
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  /// A peer cannot be reached or went away (kUnavailable).
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  /// A bounded wait expired (kDeadlineExceeded).
  static Status DeadlineExceeded(std::string msg) {
    return {StatusCode::kDeadlineExceeded, std::move(msg)};
  }
  /// The operation was cancelled (kCancelled).
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  /// The caller may not do this (kPermissionDenied).
  static Status PermissionDenied(std::string msg) {
    return {StatusCode::kPermissionDenied, std::move(msg)};
  }
  /// The caller did not prove who it is (kUnauthenticated).
  static Status Unauthenticated(std::string msg) {
    return {StatusCode::kUnauthenticated, std::move(msg)};
  }
  /// Memory or a limit ran out (kResourceExhausted).
  static Status OutOfMemory(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  /// A quota or size limit ran out (kResourceExhausted).
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  /// Data was lost or corrupted past recovery (kDataLoss).
  static Status DataLoss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
  /// The operation or combination is not implemented (kUnimplemented).
  static Status NotSupported(std::string msg) {
    return {StatusCode::kUnimplemented, std::move(msg)};
  }
  /// An invariant of ferry's own was broken (kInternal).
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  /// Reading or writing bytes failed (kIOError).
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }

  bool ok() const noexcept { return code_ == StatusCode::kOk; }
  StatusCode code() const noexcept { return code_; }
  /// The errno the operating system reported, 0 when none did: a detail for people, not a
  /// code to branch on.
  int os_error() const noexcept { return os_error_; }
  const std::string& message() const noexcept { return message_; }

  /// A copy of this status whose message is prefixed with `context` and ": ".
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return {code_, context + ": " + message_, os_error_};
  }
  /// The same for a fixed text, which makes a string only on failure: on the path of every batch
  /// a literal longer than a string's own room would otherwise cost an allocation per call.
  Status WithContext(const char* context) const {
    if (ok()) return *this;
    return {code_, std::string(context) + ": " + message_, os_error_};
  }
  /// "OK" or the message, for logs and test failures.
  std::string ToString() const { return ok() ? std::string("OK") : message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  int os_error_ = 0;
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
