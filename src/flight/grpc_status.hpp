// Internal to the flight layer: ferry's errno-style Status to gRPC's status codes and back.
#pragma once

#include <grpcpp/support/status.h>

#include "ferry/core/status.hpp"

namespace ferry::flight::internal {

/// The gRPC status for a ferry Status (ENOENT is NOT_FOUND, EEXIST ALREADY_EXISTS, EBUSY
/// FAILED_PRECONDITION, ENOTSUP UNIMPLEMENTED, EFBIG RESOURCE_EXHAUSTED, ...), message kept.
grpc::Status ToGrpc(const Status& status);
/// The ferry Status for a gRPC one, its message prefixed with `call` and gRPC's code name.
Status FromGrpc(const grpc::Status& status, const std::string& call);
/// gRPC's name of a status code ("NOT_FOUND").
const char* CodeName(grpc::StatusCode code);

}  // namespace ferry::flight::internal
