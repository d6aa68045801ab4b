// Internal to the flight layer: W3C Trace Context on Flight calls. A server reads the caller's
// `traceparent` (and `tracestate`) from a call's metadata and starts its own span of that trace;
// a client sends its options' trace, or the trace a federated server hands to its peers' calls.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>
#include <utility>
#include <vector>

#include "ferry/core/trace.hpp"
#include "ferry/flight/client.hpp"
#include "flight/server_state.hpp"

namespace ferry::flight::internal {

/// The metadata keys of W3C Trace Context over gRPC (HTTP/2 headers, lowercase).
inline constexpr const char* kTraceparentHeader = "traceparent";
inline constexpr const char* kTracestateHeader = "tracestate";

/// The start of Flight call `rpc` ("GetFlightInfo", ...): the caller's trace, parsed from the
/// call's metadata, with a fresh span id of this server's (empty when the call has none). A
/// traceparent that is not valid is ignored and logged once, for this call ("bad_traceparent",
/// kWarning); the call goes on without a trace. Logs a kDebug "flight_call" record with the
/// caller's peer and the trace.
TraceContext StartCall(ServerState* state, const grpc::CallbackServerContext* context,
                       const char* rpc);

/// While alive, the Flight calls this thread makes through a flight::Client carry `trace` (a
/// federated server's peer calls, on the federation's threads), whatever the client's options
/// say. Nests; not shared between threads.
class OutgoingTraceScope {
 public:
  explicit OutgoingTraceScope(const TraceContext& trace);
  ~OutgoingTraceScope();
  OutgoingTraceScope(const OutgoingTraceScope&) = delete;
  OutgoingTraceScope& operator=(const OutgoingTraceScope&) = delete;

 private:
  const TraceContext* previous_;
};

/// The trace headers a call made now on this thread carries: the scope's trace, else the
/// client's options' traceparent and tracestate; none when neither is set.
std::vector<std::pair<std::string, std::string>> TraceHeaders(const ClientOptions& options);

}  // namespace ferry::flight::internal
