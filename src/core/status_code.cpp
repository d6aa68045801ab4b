// The error table (ferry/core/status_code.hpp) and Status::FromErrno, the one place an errno
// becomes a code.
#include "ferry/core/status_code.hpp"

#include <cerrno>
#include <cstring>
#include <string>

namespace ferry {

namespace {

// gRPC's canonical codes (grpc::StatusCode), by value: core does not include gRPC.
enum Grpc : int {
  kGrpcOk = 0,
  kGrpcCancelled = 1,
  kGrpcUnknown = 2,
  kGrpcInvalidArgument = 3,
  kGrpcDeadlineExceeded = 4,
  kGrpcNotFound = 5,
  kGrpcAlreadyExists = 6,
  kGrpcPermissionDenied = 7,
  kGrpcResourceExhausted = 8,
  kGrpcFailedPrecondition = 9,
  kGrpcAborted = 10,
  kGrpcOutOfRange = 11,
  kGrpcUnimplemented = 12,
  kGrpcInternal = 13,
  kGrpcUnavailable = 14,
  kGrpcDataLoss = 15,
  kGrpcUnauthenticated = 16,
};

// In StatusCode order, starting at kInvalidArgument (= 1). The C codes are distinct so that a C
// caller can tell every code apart; the Python bases keep `except ValueError:` and its kind
// working for callers that know nothing of ferry's classes.
constexpr StatusCodeInfo kTable[] = {
    {StatusCode::kInvalidArgument, "InvalidArgument", "InvalidArgumentError", EINVAL,
     kGrpcInvalidArgument, "ValueError"},
    {StatusCode::kNotFound, "NotFound", "NotFoundError", ENOENT, kGrpcNotFound,
     "FileNotFoundError"},
    {StatusCode::kAlreadyExists, "AlreadyExists", "AlreadyExistsError", EEXIST, kGrpcAlreadyExists,
     "FileExistsError"},
    {StatusCode::kFailedPrecondition, "FailedPrecondition", "FailedPreconditionError", EBUSY,
     kGrpcFailedPrecondition, "RuntimeError"},
    {StatusCode::kOutOfRange, "OutOfRange", "OutOfRangeError", ERANGE, kGrpcOutOfRange,
     "IndexError"},
    {StatusCode::kUnavailable, "Unavailable", "UnavailableError", ECONNREFUSED, kGrpcUnavailable,
     "ConnectionError"},
    {StatusCode::kDeadlineExceeded, "DeadlineExceeded", "DeadlineExceededError", ETIMEDOUT,
     kGrpcDeadlineExceeded, "TimeoutError"},
    {StatusCode::kCancelled, "Cancelled", "CancelledError", ECANCELED, kGrpcCancelled, nullptr},
    {StatusCode::kPermissionDenied, "PermissionDenied", "PermissionDeniedError", EACCES,
     kGrpcPermissionDenied, "PermissionError"},
    {StatusCode::kUnauthenticated, "Unauthenticated", "UnauthenticatedError", EPERM,
     kGrpcUnauthenticated, "PermissionError"},
    {StatusCode::kResourceExhausted, "ResourceExhausted", "ResourceExhaustedError", ENOMEM,
     kGrpcResourceExhausted, "MemoryError"},
    {StatusCode::kDataLoss, "DataLoss", "DataLossError", EBADMSG, kGrpcDataLoss, nullptr},
    {StatusCode::kUnimplemented, "Unimplemented", "UnimplementedError", ENOTSUP, kGrpcUnimplemented,
     "NotImplementedError"},
    {StatusCode::kInternal, "Internal", "InternalError", ENOTRECOVERABLE, kGrpcInternal,
     "RuntimeError"},
    {StatusCode::kIOError, "IOError", "IOError", EIO, kGrpcUnknown, "OSError"},
};

constexpr bool RowsInOrder() {
  for (size_t i = 0; i < std::size(kTable); ++i) {
    if (static_cast<size_t>(kTable[i].code) != i + 1) return false;
  }
  return static_cast<size_t>(StatusCode::kIOError) == std::size(kTable);
}
static_assert(RowsInOrder(), "kTable has one row per StatusCode, in the enum's order");

}  // namespace

std::span<const StatusCodeInfo> StatusCodeTable() noexcept { return kTable; }

const StatusCodeInfo& StatusCodeInfoOf(StatusCode code) noexcept {
  const auto i = static_cast<size_t>(code);
  if (i == 0 || i > std::size(kTable))
    return kTable[static_cast<size_t>(StatusCode::kInternal) - 1];
  return kTable[i - 1];
}

const char* StatusCodeName(StatusCode code) noexcept {
  return code == StatusCode::kOk ? "OK" : StatusCodeInfoOf(code).name;
}

StatusCode StatusCodeFromErrno(int err) noexcept {
  if (err == 0) return StatusCode::kOk;
  for (const StatusCodeInfo& row : kTable) {
    if (row.c_code == err) return row.code;
  }
  // errnos that are no row's own, by the meaning they share with one.
  switch (err) {
    case EPIPE:
    case ECONNRESET:
    case ECONNABORTED:
    case ENOTCONN:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ENETDOWN:
    case EAGAIN:
    case EADDRNOTAVAIL:
      return StatusCode::kUnavailable;
    case ENOSPC:
    case EMFILE:
    case ENFILE:
    case EFBIG:
    case EMSGSIZE:
    case EOVERFLOW:
      return StatusCode::kResourceExhausted;
    case ENOSYS:  // (EOPNOTSUPP is ENOTSUP on Linux: the row's own code)
    case EAFNOSUPPORT:
    case EPROTONOSUPPORT:
      return StatusCode::kUnimplemented;
    case ETIME:
      return StatusCode::kDeadlineExceeded;
    case EISDIR:
    case ENOTDIR:
    case EBADF:
    case EFAULT:
    case EPROTO:
      return StatusCode::kInvalidArgument;
    case EADDRINUSE:
      return StatusCode::kAlreadyExists;
    case EROFS:
      return StatusCode::kPermissionDenied;
    default:
      return StatusCode::kIOError;
  }
}

int CErrorCodeOf(const Status& status) noexcept {
  return status.ok() ? 0 : StatusCodeInfoOf(status.code()).c_code;
}

StatusCode StatusCodeFromGrpc(int grpc_code) noexcept {
  if (grpc_code == kGrpcOk) return StatusCode::kOk;
  for (const StatusCodeInfo& row : kTable) {
    if (row.grpc_code == grpc_code) return row.code;
  }
  return grpc_code == kGrpcAborted ? StatusCode::kUnavailable : StatusCode::kIOError;
}

const std::string& Status::NoMessage() noexcept {
  static const std::string empty;
  return empty;
}

void Status::Free() noexcept {
  if (!state_->fixed) delete state_;
}

Status FixedStatus::status() const noexcept { return Status(&state_); }

Status Status::FromErrno(int err, const std::string& what) {
  if (err == 0) return Status::Internal(what + ": failed without an errno");
  return {StatusCodeFromErrno(err), what + ": " + std::strerror(err), err};
}

}  // namespace ferry
