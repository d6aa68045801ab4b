// W3C Trace Context on Flight calls: read on the server, sent by the client.
#include "flight/call_trace.hpp"

#include "ferry/core/log.hpp"

namespace ferry::flight::internal {

namespace {

thread_local const TraceContext* g_outgoing = nullptr;

std::string Header(const grpc::CallbackServerContext* context, const char* name) {
  const auto& md = context->client_metadata();
  auto it = md.find(name);
  return it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

}  // namespace

TraceContext StartCall(ServerState* state, const grpc::CallbackServerContext* context,
                       const char* rpc) {
  TraceContext span;
  const std::string traceparent = Header(context, kTraceparentHeader);
  LogRecord r;
  r.peer = context->peer();
  r.plane = "grpc";
  if (!traceparent.empty()) {
    Result<TraceContext> parsed = ParseTraceparent(traceparent, Header(context, kTracestateHeader));
    if (parsed.ok()) {
      span = parsed->Child();
    } else {
      r.level = LogLevel::kWarning;
      r.event = "bad_traceparent";
      r.message =
          std::string(rpc) + " from " + r.peer + ": ignoring its " + parsed.status().message();
      state->Log(r);
    }
  }
  r.level = LogLevel::kDebug;
  r.event = "flight_call";
  r.message = std::string(rpc) + " from " + r.peer;
  r.trace_id = span.trace_id;
  r.span_id = span.span_id;
  state->Log(std::move(r));
  return span;
}

OutgoingTraceScope::OutgoingTraceScope(const TraceContext& trace) : previous_(g_outgoing) {
  g_outgoing = &trace;
}

OutgoingTraceScope::~OutgoingTraceScope() { g_outgoing = previous_; }

std::vector<std::pair<std::string, std::string>> TraceHeaders(const ClientOptions& options) {
  std::vector<std::pair<std::string, std::string>> out;
  if (g_outgoing != nullptr && g_outgoing->valid()) {
    out.emplace_back(kTraceparentHeader, g_outgoing->traceparent());
    if (!g_outgoing->tracestate.empty()) {
      out.emplace_back(kTracestateHeader, g_outgoing->tracestate);
    }
  } else if (!options.traceparent.empty()) {
    out.emplace_back(kTraceparentHeader, options.traceparent);
    if (!options.tracestate.empty()) out.emplace_back(kTracestateHeader, options.tracestate);
  }
  return out;
}

}  // namespace ferry::flight::internal
