// A Flight server's drain and health: which services grpc.health.v1 answers for, the refusal of
// new work while draining, the drain action, and the server's description in the stats action.
#include "flight/drain.hpp"

#include <grpcpp/health_check_service_interface.h>

#include <nlohmann/json.hpp>

#include "ferry/core/version.hpp"

namespace ferry::flight::internal {

namespace {

// Whether gRPC's peer string (ipv4:127.0.0.1:5000, ipv6:[::1]:5000, unix:/path) is this host.
bool LocalPeer(const std::string& peer) {
  return peer.rfind("ipv4:127.", 0) == 0 || peer.rfind("ipv6:[::1]", 0) == 0 ||
         peer.rfind("ipv6:%5B::1%5D", 0) == 0 || peer.rfind("unix:", 0) == 0 ||
         peer.rfind("ipv6:[::ffff:127.", 0) == 0;
}

}  // namespace

std::vector<std::string> HealthServices(const ServerState& state) {
  std::vector<std::string> services = {"", "flight"};
  for (const auto& [transport, plane] : state.planes) services.push_back(transport);
  return services;
}

void SetHealth(grpc::Server* server, const ServerState& state, bool serving) {
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) return;
  for (const std::string& service : HealthServices(state)) {
    health->SetServingStatus(service, serving);
  }
}

grpc::Status RefuseIfDraining(ServerState* state, const char* call,
                              const grpc::CallbackServerContext* context) {
  if (!state->draining.load()) return grpc::Status::OK;
  std::string line = "refused ";
  line += call;
  line += " from " + context->peer() + ": draining";
  state->Log("call_refused_draining", line, context->peer());
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "the server is draining: it finishes the calls and sessions in progress "
                      "and takes no new one; ask another server");
}

grpc::Status DrainAction(ServerState* state, const grpc::CallbackServerContext* context) {
  if (state->options.token.empty() && !LocalPeer(context->peer())) {
    state->Log("drain_refused", "refused a drain from " + context->peer() + ": not on this host",
               context->peer());
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "a server without a token drains only at the asking of a client on its "
                        "own host; this call came from " +
                            context->peer());
  }
  state->Log("drain_asked", "drain asked by " + context->peer(), context->peer());
  if (state->begin_drain) state->begin_drain();
  return grpc::Status::OK;
}

void DescribeServer(const ServerState& state, nlohmann::json* doc) {
  const Clock& clock = *state.options.clock;
  const double uptime = std::chrono::duration<double>(clock.Now() - state.started).count();
  const bool draining = state.draining.load();
  nlohmann::json planes = nlohmann::json::array({"flight"});
  for (const auto& [transport, plane] : state.planes) planes.push_back(transport);
  (*doc)["server"] = {{"version", Version()},
                      {"uptime_s", uptime},
                      {"health", draining ? "NOT_SERVING" : "SERVING"},
                      {"draining", draining},
                      {"planes", planes}};
  nlohmann::json datasets = nlohmann::json::array();
  int64_t streams = 0;
  for (const std::shared_ptr<Flight>& f : state.catalogue.All()) {
    const int64_t readers = std::max<int64_t>(f->readers(), 0);
    streams += readers;
    datasets.push_back({{"name", f->name},
                        {"records", f->records()},
                        {"bytes", f->bytes()},
                        {"endpoints", f->partitions.size()},
                        {"readers", readers}});
  }
  (*doc)["datasets"] = std::move(datasets);
  (*doc)["grpc"]["sessions_active"] = streams;
  (*doc)["grpc"]["sessions_total"] = state.do_gets.load();
  for (const auto& [transport, plane] : state.planes) {
    const dipc::ServerStats st = plane->stats();
    (*doc)[transport]["sessions_active"] = st.clients_active;
    (*doc)[transport]["sessions_total"] = st.clients_accepted;
  }
}

}  // namespace ferry::flight::internal
