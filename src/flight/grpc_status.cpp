// Status codes between ferry and gRPC.
#include "flight/grpc_status.hpp"

#include <cerrno>

namespace ferry::flight::internal {

grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (status.code()) {
    case EINVAL:
    case ERANGE:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case ENOENT:
    case ETIME:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case EEXIST:
      code = grpc::StatusCode::ALREADY_EXISTS;
      break;
    case EBUSY:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case ENOTSUP:
      code = grpc::StatusCode::UNIMPLEMENTED;
      break;
    case EACCES:
    case EPERM:
      code = grpc::StatusCode::PERMISSION_DENIED;
      break;
    case ETIMEDOUT:
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
      break;
    case ENOMEM:
    case EFBIG:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case ECANCELED:
      code = grpc::StatusCode::CANCELLED;
      break;
    default:
      break;
  }
  return grpc::Status(code, status.message());
}

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "UNKNOWN";
  }
}

Status FromGrpc(const grpc::Status& status, const std::string& call) {
  if (status.ok()) return Status::OK();
  int code = EIO;
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      code = EINVAL;
      break;
    case grpc::StatusCode::NOT_FOUND:
      code = ENOENT;
      break;
    case grpc::StatusCode::ALREADY_EXISTS:
      code = EEXIST;
      break;
    case grpc::StatusCode::FAILED_PRECONDITION:
      code = EBUSY;
      break;
    case grpc::StatusCode::UNIMPLEMENTED:
      code = ENOTSUP;
      break;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      code = EACCES;
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      code = ETIMEDOUT;
      break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      code = EFBIG;
      break;
    case grpc::StatusCode::UNAVAILABLE:
      code = ECONNREFUSED;
      break;
    case grpc::StatusCode::CANCELLED:
      code = ECANCELED;
      break;
    default:
      break;
  }
  return Status(code, call + ": " + CodeName(status.error_code()) + ": " + status.error_message());
}

}  // namespace ferry::flight::internal
