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

class FixedStatus;

/// An outcome: OK, or a StatusCode with a message naming what was wrong and where. Where the
/// operating system gave an errno, it is kept as a detail (`os_error()`) for messages and logs;
/// code decides on `code()`. One pointer, NULL when OK: made, moved and dropped on every call's
/// way out for the cost of a pointer. A failure allocates its details once, unless it is a
/// FixedStatus's, which is shared.
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  /// A failure of `code` (kOk makes an OK status, and the message is dropped).
  Status(StatusCode code, std::string message, int os_error = 0)
      : state_(code == StatusCode::kOk ? nullptr
                                       : new State{code, os_error, std::move(message), false}) {}
  Status(const Status& other) : state_(Share(other.state_)) {}
  Status& operator=(const Status& other) {
    if (this != &other) {
      Drop();
      state_ = Share(other.state_);
    }
    return *this;
  }
  Status(Status&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  Status& operator=(Status&& other) noexcept {
    if (this != &other) {
      Drop();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  ~Status() { Drop(); }

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

  bool ok() const noexcept { return state_ == nullptr; }
  StatusCode code() const noexcept { return state_ ? state_->code : StatusCode::kOk; }
  /// The errno the operating system reported, 0 when none did: a detail for people, not a
  /// code to branch on.
  int os_error() const noexcept { return state_ ? state_->os_error : 0; }
  /// The message; empty when OK.
  const std::string& message() const noexcept { return state_ ? state_->message : NoMessage(); }

  /// A copy of this status whose message is prefixed with `context` and ": ".
  Status WithContext(const std::string& context) const {
    if (ok()) return {};
    return {state_->code, context + ": " + state_->message, state_->os_error};
  }
  /// The same for a fixed text, which makes a string only on failure.
  Status WithContext(const char* context) const {
    if (ok()) return {};
    return {state_->code, std::string(context) + ": " + state_->message, state_->os_error};
  }
  /// "OK" or the message, for logs and test failures.
  std::string ToString() const { return ok() ? std::string("OK") : state_->message; }

 private:
  friend class FixedStatus;
  struct State {
    StatusCode code;
    int os_error;
    std::string message;
    bool fixed;  // a FixedStatus's: shared, never copied or freed by a Status
  };
  explicit Status(const State* fixed) noexcept : state_(fixed) {}
  static const State* Share(const State* s) { return s == nullptr || s->fixed ? s : new State(*s); }
  // Inline, the OK case is one comparison; freeing a failure's details is out of line.
  void Drop() noexcept {
    if (state_ != nullptr) Free();
  }
  FERRY_EXPORT void Free() noexcept;
  /// The empty message of every OK status.
  FERRY_EXPORT static const std::string& NoMessage() noexcept;

  const State* state_ = nullptr;
};

/// A failure whose code and message never change, made once and handed out as often as
/// needed: status() allocates nothing, for a failure that is routine on a hot path (a poll that
/// found nothing). Owns its details; it must outlive every Status it hands out (make it a
/// static).
class FixedStatus {
 public:
  FixedStatus(StatusCode code, std::string message)
      : state_{code == StatusCode::kOk ? StatusCode::kInternal : code, 0, std::move(message),
               true} {}
  FixedStatus(const FixedStatus&) = delete;
  FixedStatus& operator=(const FixedStatus&) = delete;

  /// A Status that points at these details. (Out of line: a compiler that sees a static's
  /// address reach Status's delete warns, though `fixed` keeps it from ever being freed.)
  FERRY_EXPORT Status status() const noexcept;

 private:
  Status::State state_;
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
