// Server::metrics(): one snapshot of a Flight server's figures, read from the running totals of
// the server state, its planes, its ticket book, its RPC table and its peers; and
// PlaneMetricsOf, a plane's figures (metrics.hpp).
#include "flight/server_state.hpp"

namespace ferry::flight {

PlaneMetrics PlaneMetricsOf(const std::string& plane, const dipc::ServerStats& st) {
  PlaneMetrics p;
  p.plane = plane;
  p.sent.push_back({"list", st.batches_sent - st.packed_batches_sent,
                    st.body_bytes_sent - st.packed_body_bytes_sent});
  p.sent.push_back({"packed", st.packed_batches_sent, st.packed_body_bytes_sent});
  p.sessions_active = st.clients_active;
  p.sessions_total = st.clients_accepted;
  p.tickets_refused = st.tickets_refused;
  p.lent_buffers = st.addresses_lent;
  p.lent_buffers_freed = st.addresses_freed;
  p.lent_buffers_reclaimed = st.addresses_reclaimed;
  p.errors = st.session_errors;
  return p;
}

namespace internal {

ServerMetrics ServerState::Metrics() const {
  ServerMetrics m;
  PlaneMetrics grpc;
  grpc.plane = "grpc";
  grpc.sent.push_back({"flight_data", batches_sent.load(std::memory_order_relaxed),
                       bytes_sent.load(std::memory_order_relaxed)});
  grpc.sessions_active = do_gets_active.load(std::memory_order_relaxed);
  grpc.sessions_total = do_gets.load(std::memory_order_relaxed);
  grpc.tickets_refused = tickets_refused.load(std::memory_order_relaxed);
  if (rpc_metrics) grpc.errors = rpc_metrics->Errors();
  m.planes.push_back(std::move(grpc));
  for (const auto& [transport, plane] : planes)
    m.planes.push_back(PlaneMetricsOf(transport, plane->stats()));
  m.tickets_issued = tickets->issued();
  m.tickets_expired = tickets->expired();
  if (rpc_metrics) m.rpcs = rpc_metrics->Snapshot();
  m.peers = peer_health.Snapshot();
  return m;
}

}  // namespace internal

}  // namespace ferry::flight
