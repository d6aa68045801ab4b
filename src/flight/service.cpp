// The FlightService: authentication, discovery, actions and the handshake. The data calls are in
// service_data.cpp.
#include "flight/service.hpp"

#include <cerrno>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "ferry/core/status_code.hpp"
#include "ferry/dipc/uri.hpp"
#include "flight/call_trace.hpp"
#include "flight/clock_hook.hpp"
#include "flight/convert.hpp"
#include "flight/drain.hpp"
#include "flight/grpc_order.hpp"
#include "flight/grpc_status.hpp"
#include "flight/standard_actions.hpp"

namespace ferry::flight::internal {

namespace {

// Counts a unary call as in progress for as long as its handler runs.
struct CallScope {
  explicit CallScope(ServerState* s) : state(s) { state->CallStarted(); }
  ~CallScope() { state->CallDone(); }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  ServerState* state;
};

bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string Header(const grpc::CallbackServerContext* context, const char* name) {
  const auto& md = context->client_metadata();
  auto it = md.find(name);
  return it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

// The caller's bearer token (empty: none), which a federated server forwards to its peers.
std::string Bearer(const grpc::CallbackServerContext* context) {
  const std::string header = Header(context, "authorization");
  return header.rfind("Bearer ", 0) == 0 ? header.substr(7) : std::string();
}

bool HasBearer(const ServerState* state, const grpc::CallbackServerContext* context) {
  const std::string header = Header(context, "authorization");
  return header.rfind("Bearer ", 0) == 0 && SameSecret(header.substr(7), state->options.token);
}

// A stream of prepared messages, written one after another.
template <typename T>
class ListWriter final : public grpc::ServerWriteReactor<T> {
 public:
  ListWriter(ServerState* state, std::vector<T> items) : state_(state), items_(std::move(items)) {
    state_->CallStarted();
    Next();
  }
  void OnWriteDone(bool ok) override {
    GrpcTakeBack(this);
    if (!ok) {
      GrpcHandOff(this);
      this->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    Next();
  }
  void OnDone() override {
    GrpcTakeBack(this);
    state_->CallDone();
    delete this;
  }

 private:
  void Next() {
    if (next_ == items_.size()) {
      GrpcHandOff(this);
      this->Finish(grpc::Status::OK);
      return;
    }
    const T* item = &items_[next_++];
    GrpcHandOff(this);
    this->StartWrite(item);
  }
  ServerState* state_;
  std::vector<T> items_;
  size_t next_ = 0;
};

// A call answered with an error before anything was written.
template <typename Reactor>
class Refusal final : public Reactor {
 public:
  Refusal(ServerState* state, const grpc::Status& status) : state_(state) {
    state_->CallStarted();
    GrpcHandOff(this);
    this->Finish(status);
  }
  void OnDone() override {
    GrpcTakeBack(this);
    state_->CallDone();
    delete this;
  }

 private:
  ServerState* state_;
};

// Answers each request with its payload, after checking the credentials: a bearer token, or
// basic authentication whose password is the token (then the response's headers carry the
// bearer token, as Flight clients that authenticate with a user and password expect).
class HandshakeReactor final
    : public grpc::ServerBidiReactor<pb::HandshakeRequest, pb::HandshakeResponse> {
 public:
  HandshakeReactor(ServerState* state, grpc::CallbackServerContext* context) : state_(state) {
    state_->CallStarted();
    const std::string& token = state_->options.token;
    if (!token.empty() && !HasBearer(state_, context)) {
      const std::string header = Header(context, "authorization");
      bool basic_ok = false;
      if (header.rfind("Basic ", 0) == 0) {
        Result<std::string> decoded = dipc::Base64Decode(header.substr(6));
        if (decoded.ok()) {
          const size_t colon = decoded->find(':');
          basic_ok = colon != std::string::npos && SameSecret(decoded->substr(colon + 1), token);
        }
      }
      if (!basic_ok) {
        ++state_->unauthenticated;
        GrpcHandOff(this);
        Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "the handshake needs the server's token: send 'authorization: Bearer "
                            "<token>', or basic authentication with the token as the password"));
        return;
      }
      context->AddInitialMetadata("authorization", "Bearer " + token);
    }
    GrpcHandOff(this);
    StartSendInitialMetadata();
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    GrpcTakeBack(this);
    if (!ok) {
      GrpcHandOff(this);
      Finish(grpc::Status::OK);
      return;
    }
    response_.set_protocol_version(request_.protocol_version());
    response_.set_payload(request_.payload());
    GrpcHandOff(this);
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    GrpcTakeBack(this);
    GrpcHandOff(this);
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override {
    GrpcTakeBack(this);
    state_->CallDone();
    delete this;
  }

 private:
  ServerState* state_;
  pb::HandshakeRequest request_;
  pb::HandshakeResponse response_;
};

// append-partition's body: {"flight": NAME, "from": UPLOADED}.
Result<std::pair<std::string, std::string>> AppendArguments(const std::string& body) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("flight") || !doc["flight"].is_string() ||
      !doc.contains("from") || !doc["from"].is_string()) {
    return Status::Invalid(
        "append-partition's body is JSON {\"flight\": NAME, \"from\": UPLOADED}, not " +
        body.substr(0, 200));
  }
  std::string flight = doc["flight"].get<std::string>();
  std::string from = doc["from"].get<std::string>();
  if (flight.empty() || from.empty()) return Status::Invalid("append-partition: a name is empty");
  return std::make_pair(std::move(flight), std::move(from));
}

grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context, const grpc::Status& st) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(st);
  return reactor;
}

}  // namespace

grpc::Status Authenticate(ServerState* state, const grpc::CallbackServerContext* context) {
  const std::string& token = state->options.token;
  if (token.empty()) return grpc::Status::OK;
  if (HasBearer(state, context)) return grpc::Status::OK;
  ++state->unauthenticated;
  const std::string why = Header(context, "authorization").empty() ? "no authorization header"
                                                                   : "a wrong authorization header";
  state->Log("unauthenticated", "refused a call from " + context->peer() + ": " + why,
             context->peer());
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "this server needs its token on every call ('authorization: Bearer "
                      "<token>'); the call had " +
                          why);
}

bool FlightService::Federated(const grpc::CallbackServerContext* context) const {
  return !federation_.empty() && Header(context, kFederatedHeader).empty();
}

Result<FlightInfo> FlightService::InfoFor(const grpc::CallbackServerContext* context,
                                          const std::string& name, const TraceContext& trace) {
  Result<FlightInfo> info = state_->Info(name, trace);
  if (!Federated(context)) return info;
  return federation_.Info(name, std::move(info), Bearer(context), trace);
}

grpc::ServerBidiReactor<pb::HandshakeRequest, pb::HandshakeResponse>* FlightService::Handshake(
    grpc::CallbackServerContext* context) {
  GrpcTakeBack(this);
  return new HandshakeReactor(state_, context);
}

grpc::ServerWriteReactor<pb::FlightInfo>* FlightService::ListFlights(
    grpc::CallbackServerContext* context, const pb::Criteria* /*request*/) {
  GrpcTakeBack(this);
  using Fail = Refusal<grpc::ServerWriteReactor<pb::FlightInfo>>;
  if (grpc::Status st = Authenticate(state_, context); !st.ok()) return new Fail(state_, st);
  const TraceContext trace = StartCall(state_, context, "ListFlights");
  std::vector<FlightInfo> local;
  for (const std::shared_ptr<Flight>& f : state_->catalogue.All()) {
    Result<FlightInfo> info = state_->Info(f->name, trace);
    if (!info.ok()) continue;  // dropped in between
    local.push_back(std::move(*info));
  }
  if (Federated(context)) {
    Result<std::vector<FlightInfo>> all =
        federation_.List(std::move(local), Bearer(context), trace);
    if (!all.ok()) return new Fail(state_, ToGrpc(all.status()));
    local = std::move(*all);
  }
  std::vector<pb::FlightInfo> infos(local.size());
  for (size_t i = 0; i < local.size(); ++i) ToProto(local[i], &infos[i]);
  return new ListWriter<pb::FlightInfo>(state_, std::move(infos));
}

grpc::Status FlightService::DescribedInfo(grpc::CallbackServerContext* context,
                                          const pb::FlightDescriptor& request, const char* call,
                                          FlightInfo* out) {
  if (grpc::Status st = Authenticate(state_, context); !st.ok()) return st;
  if (grpc::Status st = RefuseIfDraining(state_, call, context); !st.ok()) return st;
  const TraceContext trace = StartCall(state_, context, call);
  Result<std::string> name = NameOf(request);
  if (!name.ok()) return ToGrpc(name.status());
  Result<FlightInfo> info = InfoFor(context, *name, trace);
  if (!info.ok()) return ToGrpc(info.status());
  *out = std::move(*info);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* FlightService::GetFlightInfo(grpc::CallbackServerContext* context,
                                                       const pb::FlightDescriptor* request,
                                                       pb::FlightInfo* response) {
  GrpcTakeBack(this);
  CallScope scope(state_);
  FlightInfo info;
  if (grpc::Status st = DescribedInfo(context, *request, "GetFlightInfo", &info); !st.ok()) {
    return Answer(context, st);
  }
  ToProto(info, response);
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* FlightService::PollFlightInfo(grpc::CallbackServerContext* context,
                                                        const pb::FlightDescriptor* request,
                                                        pb::PollInfo* response) {
  GrpcTakeBack(this);
  CallScope scope(state_);
  FlightInfo info;
  if (grpc::Status st = DescribedInfo(context, *request, "PollFlightInfo", &info); !st.ok()) {
    return Answer(context, st);
  }
  // Complete at once: the whole info, no descriptor to poll again, progress 1.
  ToProto(info, response->mutable_info());
  response->set_progress(1.0);
  return Answer(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* FlightService::GetSchema(grpc::CallbackServerContext* context,
                                                   const pb::FlightDescriptor* request,
                                                   pb::SchemaResult* response) {
  GrpcTakeBack(this);
  CallScope scope(state_);
  if (grpc::Status st = Authenticate(state_, context); !st.ok()) return Answer(context, st);
  const TraceContext trace = StartCall(state_, context, "GetSchema");
  Result<std::string> name = NameOf(*request);
  if (!name.ok()) return Answer(context, ToGrpc(name.status()));
  std::shared_ptr<Flight> flight = state_->catalogue.Find(*name);
  if (flight == nullptr && Federated(context)) {
    Result<FlightInfo> info = InfoFor(context, *name, trace);  // a peer's flight
    if (!info.ok()) return Answer(context, ToGrpc(info.status()));
    response->set_schema(info->schema);
    return Answer(context, grpc::Status::OK);
  }
  if (flight == nullptr) {
    return Answer(context, ToGrpc(Status::NotFound("no flight named \"" + *name + "\"")));
  }
  response->set_schema(flight->schema);
  return Answer(context, grpc::Status::OK);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* FlightService::DoGet(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  GrpcTakeBack(this);
  return MakeDoGet(state_, context, request);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* FlightService::DoPut(
    grpc::CallbackServerContext* context) {
  GrpcTakeBack(this);
  return MakeDoPut(state_, context);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* FlightService::DoExchange(
    grpc::CallbackServerContext* context) {
  GrpcTakeBack(this);
  using Fail = Refusal<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>>;
  if (grpc::Status st = Authenticate(state_, context); !st.ok()) return new Fail(state_, st);
  return new Fail(state_, grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                       "ferry's Flight server does not implement DoExchange: "
                                       "read flights with DoGet and upload them with DoPut"));
}

grpc::ServerWriteReactor<pb::Result>* FlightService::DoAction(grpc::CallbackServerContext* context,
                                                              const pb::Action* request) {
  GrpcTakeBack(this);
  using Fail = Refusal<grpc::ServerWriteReactor<pb::Result>>;
  if (grpc::Status st = Authenticate(state_, context); !st.ok()) return new Fail(state_, st);
  (void)StartCall(state_, context, "DoAction");
  std::vector<pb::Result> results;
  if (IsStandardAction(request->type())) {
    Result<std::vector<std::string>> bodies = StandardAction(state_, context, *request);
    if (!bodies.ok()) return new Fail(state_, ToGrpc(bodies.status()));
    for (std::string& body : *bodies) results.emplace_back().set_body(std::move(body));
  } else if (request->type() == "drop") {
    const Status st = state_->Drop(request->body());
    if (!st.ok()) return new Fail(state_, ToGrpc(st));
    results.emplace_back().set_body("dropped " + request->body());
  } else if (request->type() == "refresh-ticket") {
    const Clock& clock = *state_->tickets->clock();
    const Clock::time_point expires = clock.After(state_->options.ticket_ttl);
    const Status st = state_->tickets->Refresh(request->body(), expires);
    if (!st.ok()) {
      ++state_->tickets_refused;
      return new Fail(state_, ToGrpc(st));
    }
    results.emplace_back().set_body(FormatRfc3339(clock.ToSystem(expires)));
  } else if (request->type() == "append-partition") {
    Result<std::pair<std::string, std::string>> args = AppendArguments(request->body());
    if (!args.ok()) return new Fail(state_, ToGrpc(args.status()));
    Result<size_t> index = state_->AppendFrom(args->first, args->second);
    if (!index.ok()) return new Fail(state_, ToGrpc(index.status()));
    state_->Log("partition_appended", "appended \"" + args->second + "\" to \"" + args->first +
                                          "\" as partition " + std::to_string(*index));
    results.emplace_back().set_body(
        nlohmann::json{{"flight", args->first}, {"partition", *index}}.dump());
  } else if (request->type() == "stats") {
    results.emplace_back().set_body(state_->StatsJson());
  } else if (request->type() == "drain") {
    if (grpc::Status st = DrainAction(state_, context); !st.ok()) return new Fail(state_, st);
    results.emplace_back().set_body("draining");
#ifdef FERRY_FAULT_INJECTION
  } else if (request->type() == "test-fail") {
    // Test trees only: fail with the error code the body names, as any call failing so would.
    for (const StatusCodeInfo& row : StatusCodeTable()) {
      if (request->body() == row.name) {
        return new Fail(state_, ToGrpc(Status(row.code, "failing as asked: " + request->body())));
      }
    }
    return new Fail(state_,
                    ToGrpc(Status::Invalid("no error code named \"" + request->body() + "\"")));
  } else if (request->type() == "advance-clock") {
    // Test trees only: move the server's manual clock (flight/clock_hook.hpp).
    Result<std::string> advanced = AdvanceClock(*state_->tickets->clock(), request->body());
    if (!advanced.ok()) return new Fail(state_, ToGrpc(advanced.status()));
    results.emplace_back().set_body(*advanced);
#endif
  } else {
    return new Fail(state_, grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                         "unknown action \"" + request->type() +
                                             "\" (this server has: CancelFlightInfo, "
                                             "CloseSession, GetSessionOptions, "
                                             "RenewFlightEndpoint, SetSessionOptions, "
                                             "append-partition, drain, drop, refresh-ticket, "
                                             "stats)"));
  }
  return new ListWriter<pb::Result>(state_, std::move(results));
}

grpc::ServerWriteReactor<pb::ActionType>* FlightService::ListActions(
    grpc::CallbackServerContext* context, const pb::Empty* /*request*/) {
  GrpcTakeBack(this);
  using Fail = Refusal<grpc::ServerWriteReactor<pb::ActionType>>;
  if (grpc::Status st = Authenticate(state_, context); !st.ok()) return new Fail(state_, st);
  std::vector<pb::ActionType> types(5);
  types[2].set_type("append-partition");
  types[2].set_description(
      "Move a flight uploaded with DoPut into another flight as its next endpoint, without a "
      "copy (the flight is made if it does not exist). Body: JSON {\"flight\": NAME, \"from\": "
      "UPLOADED}. The schemas must be equal. Result: JSON {\"flight\": NAME, \"partition\": "
      "INDEX}.");
  types[0].set_type("drop");
  types[0].set_description(
      "Stop serving a flight on every plane. Body: the flight's name. Fails while a client is "
      "reading it. Result: 'dropped NAME'.");
  types[1].set_type("refresh-ticket");
  types[1].set_description(
      "Deprecated: use the standard RenewFlightEndpoint. Extend a ticket from GetFlightInfo by "
      "the server's ticket lifetime, on every location. Body: the ticket. Result: its new "
      "expiry, UTC, as RFC 3339.");
  types[3].set_type("stats");
  types[3].set_description(
      "The server's running totals per plane, as JSON: \"grpc\" (do_gets, bytes_sent, do_puts, "
      "bytes_received) and each dipc plane, \"shm\" and \"ucx\" (clients: connections, "
      "requests_reused: requests on a kept connection, batches_sent, body_bytes_sent: type-0 "
      "bodies, addresses_lent: type-1 buffers). Body: empty.");
  types[4].set_type("drain");
  types[4].set_description(
      "Start a drain: health turns NOT_SERVING, new GetFlightInfo, DoGet, DoPut and plane "
      "sessions are refused with UNAVAILABLE, and those in progress run to their end; `ferry "
      "serve` then exits. Needs the server's token when it has one (else a caller on its host). "
      "Body: empty. Result: 'draining'.");
  for (auto& [type, description] : StandardActionTypes()) {
    pb::ActionType& t = types.emplace_back();
    t.set_type(std::move(type));
    t.set_description(std::move(description));
  }
  return new ListWriter<pb::ActionType>(state_, std::move(types));
}

}  // namespace ferry::flight::internal
