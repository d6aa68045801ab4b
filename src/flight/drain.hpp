// Internal to the flight layer: a Flight server's drain and its grpc.health.v1 statuses. A drain
// turns health NOT_SERVING and refuses new work (GetFlightInfo, PollFlightInfo, DoGet, DoPut and
// the planes' sessions) with UNAVAILABLE, while what is in progress runs to its end.
#pragma once

#include <grpcpp/grpcpp.h>

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "flight/server_state.hpp"

namespace ferry::flight::internal {

/// The services grpc.health.v1 answers for: "" (the whole server), "flight" (gRPC's own DoGet),
/// then each plane served ("shm", "ucx").
std::vector<std::string> HealthServices(const ServerState& state);

/// Set every one of HealthServices SERVING or NOT_SERVING on `server`'s default health service
/// (grpc::EnableDefaultHealthCheckService); nothing when it has none.
void SetHealth(grpc::Server* server, const ServerState& state, bool serving);

/// OK, or UNAVAILABLE saying that the server is draining, for a `call` that would start new work
/// (logged with the caller's address).
grpc::Status RefuseIfDraining(ServerState* state, const char* call,
                              const grpc::CallbackServerContext* context);

/// The drain action: starts a drain (state->begin_drain). With a token, the call was admitted by
/// Authenticate, so it holds the token; without one, only a caller on this host (loopback, a unix
/// socket) may drain the server: PERMISSION_DENIED for any other.
grpc::Status DrainAction(ServerState* state, const grpc::CallbackServerContext* context);

/// Add to the stats action's JSON what `ferry status` shows beside the planes' totals: "server"
/// (version, uptime_s, health, draining, planes), "datasets" (name, records, bytes, endpoints,
/// readers) and, in each plane's object, sessions_active and sessions_total.
void DescribeServer(const ServerState& state, nlohmann::json* doc);

}  // namespace ferry::flight::internal
