// Flight's standard actions: renewing and cancelling what GetFlightInfo issued, and the session
// options kept by the arrow_flight_session_id cookie.
#include "flight/standard_actions.hpp"

#include "flight/convert.hpp"
#include "flight/sessions.hpp"

namespace ferry::flight::internal {

namespace {

namespace pb = ::arrow::flight::protocol;

constexpr const char* kRenew = "RenewFlightEndpoint";
constexpr const char* kCancel = "CancelFlightInfo";
constexpr const char* kSetOptions = "SetSessionOptions";
constexpr const char* kGetOptions = "GetSessionOptions";
constexpr const char* kCloseSession = "CloseSession";

OptionValue FromProto(const pb::SessionOptionValue& v) {
  switch (v.option_value_case()) {
    case pb::SessionOptionValue::kStringValue:
      return v.string_value();
    case pb::SessionOptionValue::kBoolValue:
      return v.bool_value();
    case pb::SessionOptionValue::kInt64Value:
      return static_cast<int64_t>(v.int64_value());
    case pb::SessionOptionValue::kDoubleValue:
      return v.double_value();
    case pb::SessionOptionValue::kStringListValue:
      return std::vector<std::string>(v.string_list_value().values().begin(),
                                      v.string_list_value().values().end());
    case pb::SessionOptionValue::OPTION_VALUE_NOT_SET:
      break;
  }
  return std::monostate{};
}

void ToProto(const OptionValue& v, pb::SessionOptionValue* out) {
  if (const auto* s = std::get_if<std::string>(&v)) {
    out->set_string_value(*s);
  } else if (const auto* b = std::get_if<bool>(&v)) {
    out->set_bool_value(*b);
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    out->set_int64_value(*i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    out->set_double_value(*d);
  } else if (const auto* l = std::get_if<std::vector<std::string>>(&v)) {
    for (const std::string& item : *l) out->mutable_string_list_value()->add_values(item);
  }
}

template <typename Message>
Result<Message> ParseBody(const pb::Action& action, const char* what) {
  Message m;
  if (!m.ParseFromString(action.body())) {
    return Status::Invalid(std::string(action.type()) + "'s body is not a " + what +
                           " protobuf message (" + std::to_string(action.body().size()) +
                           " bytes)");
  }
  return m;
}

std::string Serialized(const google::protobuf::MessageLite& m) {
  std::string out;
  m.SerializeToString(&out);
  return out;
}

Result<std::vector<std::string>> Renew(ServerState* state, const pb::Action& action) {
  FERRY_ASSIGN_OR_RAISE(
      pb::RenewFlightEndpointRequest request,
      ParseBody<pb::RenewFlightEndpointRequest>(action, "RenewFlightEndpointRequest"));
  if (!request.has_endpoint() || !request.endpoint().has_ticket()) {
    return Status::Invalid("RenewFlightEndpoint's request has no endpoint ticket to renew");
  }
  const Clock& clock = *state->tickets->clock();
  const Clock::time_point expires = clock.After(state->options.ticket_ttl);
  const Status st = state->tickets->Refresh(request.endpoint().ticket().ticket(), expires);
  if (!st.ok()) {
    ++state->tickets_refused;
    return st.WithContext("RenewFlightEndpoint");
  }
  // The endpoint as the client knows it, with its new expiry.
  pb::FlightEndpoint renewed = request.endpoint();
  ToTimestamp(clock.ToSystem(expires), renewed.mutable_expiration_time());
  return std::vector<std::string>{Serialized(renewed)};
}

Result<std::vector<std::string>> Cancel(ServerState* state, const pb::Action& action) {
  FERRY_ASSIGN_OR_RAISE(pb::CancelFlightInfoRequest request,
                        ParseBody<pb::CancelFlightInfoRequest>(action, "CancelFlightInfoRequest"));
  if (!request.has_info() || request.info().endpoint_size() == 0) {
    return Status::Invalid("CancelFlightInfo's request has no FlightInfo endpoints to cancel");
  }
  int live = 0;
  int streams = 0;
  for (const pb::FlightEndpoint& e : request.info().endpoint()) {
    const std::string& ticket = e.ticket().ticket();
    // The ticket first, so that no new read starts; then the reads already redeemed with it.
    if (state->tickets->Cancel(ticket).ok()) ++live;
    streams += state->active_reads.Cancel(ticket);
    for (const auto& [transport, plane] : state->planes) {
      streams += static_cast<int>(plane->CancelTicket(ticket));
    }
  }
  pb::CancelFlightInfoResult result;
  // Nothing live to cancel (an endpoint of another server, a ticket expired or cancelled before).
  result.set_status(live + streams > 0 ? pb::CANCEL_STATUS_CANCELLED
                                       : pb::CANCEL_STATUS_NOT_CANCELLABLE);
  state->Log("flight_cancelled", "CancelFlightInfo: " + std::to_string(live) + " tickets, " +
                                     std::to_string(streams) + " reads ended");
  return std::vector<std::string>{Serialized(result)};
}

Result<std::vector<std::string>> SetOptions(ServerState* state,
                                            grpc::CallbackServerContext* context,
                                            const pb::Action& action) {
  FERRY_ASSIGN_OR_RAISE(
      pb::SetSessionOptionsRequest request,
      ParseBody<pb::SetSessionOptionsRequest>(action, "SetSessionOptionsRequest"));
  std::map<std::string, OptionValue> values;
  for (const auto& [name, value] : request.session_options()) values[name] = FromProto(value);
  std::string id = SessionTable::CookieOf(context);
  const bool opened = id.empty();
  FERRY_ASSIGN_OR_RAISE(auto errors, state->sessions.Set(&id, values));
  if (opened) context->AddInitialMetadata("set-cookie", std::string(kSessionCookie) + "=" + id);
  pb::SetSessionOptionsResult result;
  for (const auto& [name, error] : errors) {
    (*result.mutable_errors())[name].set_value(error == OptionError::kInvalidName
                                                   ? pb::SetSessionOptionsResult::INVALID_NAME
                                                   : pb::SetSessionOptionsResult::INVALID_VALUE);
  }
  return std::vector<std::string>{Serialized(result)};
}

Result<std::vector<std::string>> GetOptions(ServerState* state,
                                            grpc::CallbackServerContext* context,
                                            const pb::Action& action) {
  FERRY_RETURN_NOT_OK(
      ParseBody<pb::GetSessionOptionsRequest>(action, "GetSessionOptionsRequest").status());
  FERRY_ASSIGN_OR_RAISE(SessionValues values, state->sessions.Get(SessionTable::CookieOf(context)));
  pb::GetSessionOptionsResult result;
  for (const auto& [name, value] : values) {
    ToProto(value, &(*result.mutable_session_options())[name]);
  }
  return std::vector<std::string>{Serialized(result)};
}

Result<std::vector<std::string>> CloseSession(ServerState* state,
                                              grpc::CallbackServerContext* context,
                                              const pb::Action& action) {
  FERRY_RETURN_NOT_OK(ParseBody<pb::CloseSessionRequest>(action, "CloseSessionRequest").status());
  FERRY_RETURN_NOT_OK(state->sessions.Close(SessionTable::CookieOf(context)));
  // The client forgets the cookie: an expiry in the past.
  context->AddInitialMetadata("set-cookie", std::string(kSessionCookie) + "=; Max-Age=0");
  pb::CloseSessionResult result;
  result.set_status(pb::CloseSessionResult::CLOSED);
  return std::vector<std::string>{Serialized(result)};
}

}  // namespace

bool IsStandardAction(const std::string& type) {
  return type == kRenew || type == kCancel || type == kSetOptions || type == kGetOptions ||
         type == kCloseSession;
}

Result<std::vector<std::string>> StandardAction(ServerState* state,
                                                grpc::CallbackServerContext* context,
                                                const pb::Action& action) {
  const std::string& type = action.type();
  if (type == kRenew) return Renew(state, action);
  if (type == kCancel) return Cancel(state, action);
  if (type == kSetOptions) return SetOptions(state, context, action);
  if (type == kGetOptions) return GetOptions(state, context, action);
  if (type == kCloseSession) return CloseSession(state, context, action);
  return Status::Invalid("\"" + type + "\" is not a standard Flight action");
}

std::vector<std::pair<std::string, std::string>> StandardActionTypes() {
  return {
      {kCancel,
       "Cancel a FlightInfo's reads: its tickets redeem nothing from now on and the DoGet streams "
       "reading them end. Body: CancelFlightInfoRequest. Result: CancelFlightInfoResult."},
      {kRenew,
       "Extend an endpoint's ticket by the server's ticket lifetime. Body: "
       "RenewFlightEndpointRequest. Result: the FlightEndpoint with its new expiration_time."},
      {kSetOptions,
       "Set session options (compression, body_type, parallelism, target_device), opening a "
       "session kept by the arrow_flight_session_id cookie. Body: SetSessionOptionsRequest. "
       "Result: SetSessionOptionsResult, naming each option refused."},
      {kGetOptions,
       "The session's options. Body: GetSessionOptionsRequest. Result: GetSessionOptionsResult."},
      {kCloseSession,
       "Close the session the cookie names. Body: CloseSessionRequest. Result: "
       "CloseSessionResult."},
  };
}

}  // namespace ferry::flight::internal
