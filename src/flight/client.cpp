// The Flight client: the channel, the calls that answer at once, and DoPut.
#include "ferry/flight/client.hpp"

#include <grpcpp/grpcpp.h>

#include <cerrno>
#include <deque>
#include <optional>
#include <utility>

#include "Flight.grpc.pb.h"
#include "ferry/core/host_port.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/ipc/writer.hpp"
#include "flight/batch_slices.hpp"
#include "flight/call_trace.hpp"
#include "flight/client_impl.hpp"
#include "flight/convert.hpp"
#include "flight/grpc_library.hpp"
#include "flight/grpc_status.hpp"
#include "flight/raw_call.hpp"
#include "flight/wire.hpp"

namespace ferry::flight {

namespace internal {

namespace {

// Sends each message as it is encoded: the first carries the descriptor. Lent body pieces keep
// the batch they point into alive until gRPC has sent them.
class PutSink final : public ipc::MessageSink {
 public:
  PutSink(RawCall* call, std::string descriptor)
      : call_(call), descriptor_(std::move(descriptor)) {}
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    if (closed_) return Status::OK();  // the server ended the call; Finish tells why
    if (oversize_ > 0) {
      return Status::Invalid("a dictionary of " + std::to_string(oversize_) +
                             " bytes is over gRPC's message limit and cannot be split");
    }
    if (m.body_length > kMaxMessageBody) {
      oversize_ = m.body_length;  // not sent: PutBatch sends the batch as slices
      return Status::OK();
    }
    grpc::ByteBuffer buffer = EncodeFlightData(m, batch, descriptor_);
    descriptor_.clear();
    FERRY_ASSIGN_OR_RAISE(bool sent, call_->Write(buffer));
    closed_ = !sent;
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  bool closed() const { return closed_; }
  /// The body size of the batch just written if it was over the limit (and not sent), else 0.
  int64_t TakeOversize() { return std::exchange(oversize_, 0); }
  std::shared_ptr<const void> batch;

 private:
  int64_t oversize_ = 0;
  RawCall* call_;
  std::string descriptor_;
  bool closed_ = false;
};

// Write `array`, or, when its body would pass gRPC's limit, slices of it that each stay under
// it (over the batch's own memory; the server stores them as batches of their own).
Status PutBatch(ipc::StreamWriter* writer, PutSink* sink, const ArrowArray* array) {
  ArrowDeviceArray whole{};
  whole.array = *array;
  whole.device_type = ARROW_DEVICE_CPU;
  whole.device_id = -1;
  std::deque<std::pair<int64_t, int64_t>> todo{{0, array->length}};
  while (!todo.empty() && !sink->closed()) {
    const auto [offset, length] = todo.front();
    todo.pop_front();
    std::optional<BatchSlice> slice;
    const ArrowArray* what = array;
    if (offset != 0 || length != array->length) {
      slice.emplace(whole, offset, length);
      what = &slice->get()->array;
    }
    FERRY_RETURN_NOT_OK(writer->WriteBatch(what));
    const int64_t oversize = sink->TakeOversize();
    if (oversize == 0) continue;
    if (length < 128) {
      return Status::Invalid(std::to_string(length) + " rows take " + std::to_string(oversize) +
                             " bytes, over gRPC's message limit even when split");
    }
    const auto ranges = SliceRanges(length, oversize / kMaxMessageBody + 1);
    for (auto r = ranges.rbegin(); r != ranges.rend(); ++r) {
      todo.emplace_front(offset + r->first, r->second);
    }
  }
  return Status::OK();
}

}  // namespace

ClientImpl::ClientImpl(std::string uri, std::string host, std::shared_ptr<grpc::Channel> channel,
                       ClientOptions options)
    : uri_(std::move(uri)),
      host_(std::move(host)),
      channel_(std::move(channel)),
      stub_(pb::FlightService::NewStub(channel_)),
      options_(std::move(options)),
      reader_(std::make_shared<const EndpointReader>(
          uri_, host_, channel_, options_, counters_, session_,
          options_.keep_connections ? std::make_shared<dipc::ConnectionPool>() : nullptr)) {}

ClientImpl::~ClientImpl() = default;

void ClientImpl::Prepare(grpc::ClientContext* context) const {
  if (!options_.token.empty()) context->AddMetadata("authorization", "Bearer " + options_.token);
  for (const auto& [name, value] : options_.headers) context->AddMetadata(name, value);
  for (const auto& [name, value] : TraceHeaders(options_)) context->AddMetadata(name, value);
  for (const auto& [name, value] : session_->Headers()) context->AddMetadata(name, value);
  context->set_deadline(std::chrono::system_clock::now() + options_.timeout);
}

Result<std::vector<FlightInfo>> ClientImpl::ListFlights() {
  grpc::ClientContext context;
  Prepare(&context);
  pb::Criteria criteria;
  std::unique_ptr<grpc::ClientReader<pb::FlightInfo>> reader =
      stub_->ListFlights(&context, criteria);
  std::vector<FlightInfo> out;
  pb::FlightInfo info;
  while (reader->Read(&info)) out.push_back(FromProto(info));
  FERRY_RETURN_NOT_OK(FromGrpc(reader->Finish(), "ListFlights on " + uri_));
  return out;
}

Result<FlightInfo> ClientImpl::GetFlightInfo(const std::string& path) {
  grpc::ClientContext context;
  Prepare(&context);
  pb::FlightInfo info;
  FERRY_RETURN_NOT_OK(FromGrpc(stub_->GetFlightInfo(&context, PathDescriptor(path), &info),
                               "GetFlightInfo [" + path + "] on " + uri_));
  return FromProto(info);
}

Result<UniqueSchema> ClientImpl::GetSchema(const std::string& path) {
  grpc::ClientContext context;
  Prepare(&context);
  pb::SchemaResult result;
  FERRY_RETURN_NOT_OK(FromGrpc(stub_->GetSchema(&context, PathDescriptor(path), &result),
                               "GetSchema [" + path + "] on " + uri_));
  return DecodeSchema(result.schema());
}

Result<UniqueDeviceArrayStream> ClientImpl::DoGet(const std::string& ticket, GetOptions options) {
  FERRY_ASSIGN_OR_RAISE(options, session_->Apply(options));
  std::vector<std::pair<std::string, std::string>> headers = TraceHeaders(options_);
  for (auto& header : session_->Headers()) headers.push_back(std::move(header));
  FERRY_ASSIGN_OR_RAISE(
      UniqueDeviceArrayStream stream,
      OpenDoGet(channel_, options_.token, ticket, options, options_.timeout, headers));
  return CountBytes(std::move(stream), counters_, &counters_->grpc, "DoGet on " + uri_);
}

PlaneBytes ClientImpl::plane_bytes() const {
  PlaneBytes out;
  out.shm = counters_->shm.load();
  out.ucx = counters_->ucx.load();
  out.grpc = counters_->grpc.load();
  return out;
}

Status ClientImpl::Put(const std::string& path, ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) {
    return Status::Invalid("Put: the stream is NULL or released");
  }
  UniqueArrayStream owned(stream);
  UniqueSchema schema;
  FERRY_RETURN_NOT_OK(
      StreamGetSchema(owned.get(), schema.get()).WithContext("Put: the stream's get_schema"));
  RawCall call(channel_, "DoPut", options_.token, options_.timeout, TraceHeaders(options_));
  FERRY_RETURN_NOT_OK(call.Start());
  PutSink sink(&call, PathDescriptor(path).SerializeAsString());
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer, ipc::StreamWriter::Open(&sink, schema.get()));
  while (!sink.closed()) {
    auto batch = std::make_shared<UniqueArray>();
    FERRY_RETURN_NOT_OK(
        StreamGetNext(owned.get(), batch->get()).WithContext("Put: the stream's get_next"));
    if (!batch->valid()) break;
    sink.batch = batch;
    FERRY_RETURN_NOT_OK(PutBatch(&writer, &sink, batch->get()));
  }
  FERRY_RETURN_NOT_OK(writer.Close());
  if (!sink.closed()) FERRY_RETURN_NOT_OK(call.WritesDone());
  grpc::ByteBuffer result;
  while (true) {
    FERRY_ASSIGN_OR_RAISE(bool more, call.Read(&result));
    if (!more) break;
  }
  return call.Finish().WithContext("Put [" + path + "] on " + uri_);
}

Result<std::vector<std::string>> ClientImpl::Action(const std::string& type,
                                                    const std::string& body) {
  grpc::ClientContext context;
  Prepare(&context);
  pb::Action action;
  action.set_type(type);
  action.set_body(body);
  std::unique_ptr<grpc::ClientReader<pb::Result>> reader = stub_->DoAction(&context, action);
  std::vector<std::string> out;
  pb::Result r;
  while (reader->Read(&r)) out.push_back(r.body());
  const grpc::Status status = reader->Finish();
  // A session the server opened or closed, whoever built the body (Arrow C++'s cookie
  // middleware does the same for every call).
  session_->TakeSetCookie(context.GetServerInitialMetadata());
  FERRY_RETURN_NOT_OK(FromGrpc(status, "DoAction " + type + " on " + uri_));
  return out;
}

Result<std::map<std::string, std::string>> ClientImpl::SetSessionOptions(
    const SessionOptions& options) {
  pb::SetSessionOptionsRequest request;
  for (const auto& [name, value] : options) {
    pb::SessionOptionValue& v = (*request.mutable_session_options())[name];
    if (!value.empty()) v.set_string_value(value);  // the server takes text for every option
  }
  FERRY_ASSIGN_OR_RAISE(std::vector<std::string> answer,
                        Action("SetSessionOptions", request.SerializeAsString()));
  pb::SetSessionOptionsResult result;
  if (answer.size() != 1 || !result.ParseFromString(answer[0])) {
    return Status::IOError("SetSessionOptions on " + uri_ +
                           ": the answer is not one SetSessionOptionsResult");
  }
  std::map<std::string, std::string> refused;
  for (const auto& [name, error] : result.errors()) {
    refused[name] = pb::SetSessionOptionsResult::ErrorValue_Name(error.value());
  }
  // What the server holds now, normalised, is what later reads apply.
  FERRY_RETURN_NOT_OK(GetSessionOptions().status());
  return refused;
}

Result<SessionOptions> ClientImpl::GetSessionOptions() {
  FERRY_ASSIGN_OR_RAISE(
      std::vector<std::string> answer,
      Action("GetSessionOptions", pb::GetSessionOptionsRequest().SerializeAsString()));
  pb::GetSessionOptionsResult result;
  if (answer.size() != 1 || !result.ParseFromString(answer[0])) {
    return Status::IOError("GetSessionOptions on " + uri_ +
                           ": the answer is not one GetSessionOptionsResult");
  }
  SessionOptions out;
  for (const auto& [name, value] : result.session_options()) out[name] = OptionText(value);
  if (session_->open()) session_->set_options(out);
  return out;
}

Status ClientImpl::CloseSession() {
  FERRY_RETURN_NOT_OK(
      Action("CloseSession", pb::CloseSessionRequest().SerializeAsString()).status());
  return Status::OK();
}

Result<std::vector<ActionType>> ClientImpl::ListActions() {
  grpc::ClientContext context;
  Prepare(&context);
  std::unique_ptr<grpc::ClientReader<pb::ActionType>> reader =
      stub_->ListActions(&context, pb::Empty());
  std::vector<ActionType> out;
  pb::ActionType t;
  while (reader->Read(&t)) out.push_back(ActionType{t.type(), t.description()});
  FERRY_RETURN_NOT_OK(FromGrpc(reader->Finish(), "ListActions on " + uri_));
  return out;
}

}  // namespace internal

Result<std::unique_ptr<Client>> Client::Connect(const std::string& uri, ClientOptions options) {
  FERRY_RETURN_NOT_OK(CheckClientTrace(options.traceparent, options.tracestate));
  const size_t sep = uri.find("://");
  if (sep == std::string::npos) {
    return Status::Invalid("\"" + uri + "\" is not a Flight URI (grpc://HOST:PORT, " +
                           "grpc+tls://HOST:PORT or grpc+unix:///PATH)");
  }
  const std::string scheme = uri.substr(0, sep);
  std::string rest = uri.substr(sep + 3);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  std::string target;
  std::string host;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (scheme == "grpc" || scheme == "grpc+tcp" || scheme == "grpc+tls") {
    Result<HostPort> parsed = ParseHostPort(rest);
    if (rest.find('/') != std::string::npos || !parsed.ok()) {
      return Status::Invalid("the Flight URI \"" + uri + "\" needs HOST:PORT after " + scheme +
                             "://" + (parsed.ok() ? "" : " (" + parsed.status().message() + ")"));
    }
    target = rest;
    host = parsed->HostInAddress();
  } else if (scheme == "grpc+unix") {
    if (rest.empty()) return Status::Invalid("the Flight URI \"" + uri + "\" needs a socket path");
    target = "unix:" + (rest[0] == '/' ? rest : "/" + rest);
    host = "localhost";
  } else {
    return Status::Invalid("unknown Flight URI scheme \"" + scheme +
                           "\" (grpc, grpc+tcp, grpc+tls, grpc+unix)");
  }
  internal::HoldGrpcLibrary();  // so that closing a client never tears gRPC down
  if (scheme == "grpc+tls") {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = options.tls_roots;
    tls.pem_cert_chain = options.tls_cert;
    tls.pem_private_key = options.tls_key;
    credentials = grpc::SslCredentials(tls);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  // A FlightData holds a whole batch: no limit on either side's messages.
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(target, credentials, args);
  if (channel == nullptr) return Status::IOError("gRPC could not make a channel to " + uri);
  return std::unique_ptr<Client>(
      std::make_unique<internal::ClientImpl>(uri, host, std::move(channel), std::move(options)));
}

}  // namespace ferry::flight
