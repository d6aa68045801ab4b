// Internal to the flight layer: ferry's Status to gRPC's status codes and back.
#pragma once

#include <grpcpp/support/status.h>

#include "ferry/core/status.hpp"

namespace ferry::flight::internal {

/// The gRPC status for a ferry Status, by the error table's `grpc_code` (kNotFound is
/// NOT_FOUND, kIOError UNKNOWN, ...), message kept.
grpc::Status ToGrpc(const Status& status);
/// The ferry Status for a gRPC one (StatusCodeFromGrpc), its message prefixed with `call` and
/// gRPC's code name.
Status FromGrpc(const grpc::Status& status, const std::string& call);
/// gRPC's name of a status code ("NOT_FOUND").
const char* CodeName(grpc::StatusCode code);

}  // namespace ferry::flight::internal
