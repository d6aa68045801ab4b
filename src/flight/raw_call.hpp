// Internal to the flight layer: one streaming call with gRPC ByteBuffers, driven from the
// caller's thread through a completion queue of its own (no thread, every wait bounded).
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ferry/core/result.hpp"

namespace ferry::flight::internal {

/// A call of FlightService method `method` ("DoGet", "DoPut") on `channel`, started on
/// construction (Start reports whether it could be). Each operation waits for its completion,
/// at most `timeout`; a timeout cancels the call. Destruction cancels a call not finished.
class RawCall {
 public:
  /// `headers`: metadata sent besides the token (a trace's traceparent).
  RawCall(std::shared_ptr<grpc::Channel> channel, const std::string& method,
          const std::string& token, std::chrono::milliseconds timeout,
          const std::vector<std::pair<std::string, std::string>>& headers = {});
  ~RawCall();
  RawCall(const RawCall&) = delete;
  RawCall& operator=(const RawCall&) = delete;

  Status Start();
  /// Send one message; false when the server has ended the call (Finish tells why).
  Result<bool> Write(const grpc::ByteBuffer& message);
  Status WritesDone();
  /// The next message; false at the end of the server's stream.
  Result<bool> Read(grpc::ByteBuffer* message);
  /// The call's status, once both sides are done; the error names the method.
  Status Finish();

 private:
  Result<bool> Wait(void* tag, const char* what);

  std::string method_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  grpc::ClientContext context_;
  grpc::CompletionQueue queue_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace ferry::flight::internal
