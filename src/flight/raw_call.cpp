// Streaming calls over gRPC's generic stub, one completion queue per call.
#include "flight/raw_call.hpp"

#include <cerrno>

#include "flight/grpc_status.hpp"

namespace ferry::flight::internal {

namespace {

// Each operation's tag: the queue holds one operation at a time, so the tag only checks that.
char g_tags[10];
void* Tag(int op) { return &g_tags[op]; }

}  // namespace

RawCall::RawCall(std::shared_ptr<grpc::Channel> channel, const std::string& method,
                 const std::string& token, std::chrono::milliseconds timeout,
                 const std::vector<std::pair<std::string, std::string>>& headers)
    : method_(method), timeout_(timeout), channel_(channel), stub_(std::move(channel)) {
  if (!token.empty()) context_.AddMetadata("authorization", "Bearer " + token);
  for (const auto& [name, value] : headers) context_.AddMetadata(name, value);
}

RawCall::~RawCall() {
  if (started_ && !finished_) {
    context_.TryCancel();
    grpc::Status ignored;
    call_->Finish(&ignored, Tag(9));
    void* tag = nullptr;
    bool ok = false;
    // Cancelled: the finish completes promptly; bounded anyway.
    while (
        queue_.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(5)) ==
            grpc::CompletionQueue::GOT_EVENT &&
        tag != Tag(9)) {
    }
  }
  queue_.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue_.Next(&tag, &ok)) {
  }
}

Status RawCall::Start() {
  call_ = stub_.PrepareCall(&context_, "/arrow.flight.protocol.FlightService/" + method_, &queue_);
  if (call_ == nullptr) return Status::Internal(method_ + ": gRPC could not prepare the call");
  started_ = true;
  call_->StartCall(Tag(1));
  FERRY_ASSIGN_OR_RAISE(bool ok, Wait(Tag(1), "starting the call"));
  if (!ok) return Finish();
  return Status::OK();
}

Result<bool> RawCall::Wait(void* want, const char* what) {
  void* tag = nullptr;
  bool ok = false;
  const auto deadline = std::chrono::system_clock::now() + timeout_;
  switch (queue_.AsyncNext(&tag, &ok, deadline)) {
    case grpc::CompletionQueue::GOT_EVENT:
      if (tag != want)
        return Status::Internal(method_ + ": gRPC completed an operation out of turn");
      return ok;
    case grpc::CompletionQueue::TIMEOUT: {
      context_.TryCancel();
      // The cancelled operation still completes; take it before reporting.
      queue_.Next(&tag, &ok);
      return Status::DeadlineExceeded(method_ + ": the server was silent for " +
                                      std::to_string(timeout_.count()) + " ms while " + what);
    }
    default:
      return Status::Cancelled(method_ + ": the call's queue shut down while " + what);
  }
}

Result<bool> RawCall::Write(const grpc::ByteBuffer& message) {
  call_->Write(message, Tag(2));
  return Wait(Tag(2), "sending");
}

Status RawCall::WritesDone() {
  call_->WritesDone(Tag(3));
  return Wait(Tag(3), "closing the upload").status();
}

Result<bool> RawCall::Read(grpc::ByteBuffer* message) {
  call_->Read(message, Tag(4));
  return Wait(Tag(4), "waiting for the next message");
}

Status RawCall::Finish() {
  grpc::Status status;
  call_->Finish(&status, Tag(5));
  finished_ = true;  // issued: never again, even if the wait fails
  FERRY_RETURN_NOT_OK(Wait(Tag(5), "finishing").status());
  return FromGrpc(status, method_);
}

}  // namespace ferry::flight::internal
