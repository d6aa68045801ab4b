// The one table of ferry's error codes: what each StatusCode is on every face.
#pragma once

#include <span>
#include <string_view>

#include "ferry/abi/export.h"
#include "ferry/core/status.hpp"

namespace ferry {

/// One row of the error table: a StatusCode and what it becomes on each face. Static data;
/// every face builds its own mapping from these rows, so the table is the only place that
/// decides.
struct StatusCodeInfo {
  StatusCode code;
  /// The code's name ("InvalidArgument"), as messages and `ferry status` print it.
  const char* name;
  /// The exception class the Python and Ruby faces raise for it, under `ferry.Error` and
  /// `Ferry::Error`: "InvalidArgumentError" is `ferry.InvalidArgumentError` and
  /// `Ferry::InvalidArgumentError`.
  const char* error_class;
  /// The C API's errno-style return code (nanoarrow's convention); distinct for every code.
  int c_code;
  /// The gRPC canonical status code (grpc::StatusCode's value).
  int grpc_code;
  /// The Python builtin the face's exception class also derives from ("ValueError"), or
  /// nullptr when it derives from `ferry.Error` alone.
  const char* python_base;
};

/// Every row, in StatusCode order; kOk is not a row.
FERRY_EXPORT std::span<const StatusCodeInfo> StatusCodeTable() noexcept;

/// The row of `code` (kOk and values outside the enum give the kInternal row).
FERRY_EXPORT const StatusCodeInfo& StatusCodeInfoOf(StatusCode code) noexcept;

/// "InvalidArgument", ...; "OK" for kOk.
FERRY_EXPORT const char* StatusCodeName(StatusCode code) noexcept;

/// The code an errno means, for turning what the operating system or a C callback returned into
/// a Status: each row's own `c_code` maps back to its code, and the other errnos to the code
/// whose meaning they share (EPIPE and ECONNRESET are kUnavailable, ENOSPC kResourceExhausted,
/// an unknown errno kIOError). 0 gives kOk.
FERRY_EXPORT StatusCode StatusCodeFromErrno(int err) noexcept;

/// The C API's return code for `status`: 0 when OK, else its row's `c_code`.
FERRY_EXPORT int CErrorCodeOf(const Status& status) noexcept;

/// The code a gRPC canonical status means: each row's own `grpc_code` maps back to its code;
/// UNKNOWN is kIOError and ABORTED kUnavailable. 0 gives kOk.
FERRY_EXPORT StatusCode StatusCodeFromGrpc(int grpc_code) noexcept;

}  // namespace ferry
