// A Flight server's figures for monitoring, as one snapshot (Server::metrics()): what each plane
// sent, its sessions, tickets, lent buffers and errors, each Flight RPC's latency, and the
// federation peers' state. Plain values; an exporter (`ferry serve --metrics`) turns them into
// Prometheus' text format.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/status.hpp"
#include "ferry/dipc/server.hpp"

namespace ferry::flight {

/// A latency histogram: counts per bucket, each bucket the calls that took at most its bound
/// and more than the one before (not cumulative), the last one past every bound.
struct FERRY_EXPORT LatencyHistogram {
  /// Upper bounds in seconds, ascending (kLatencyBounds).
  std::vector<double> bounds;
  /// bounds.size() + 1 counts.
  std::vector<int64_t> counts;
  int64_t count = 0;
  double sum_seconds = 0;
};

/// The buckets' bounds of every RPC latency histogram, in seconds: 100 µs to 60 s.
FERRY_EXPORT const std::vector<double>& LatencyBounds();

/// What one plane sent with one body type: "list" and "packed" bodies on the shm and ucx planes
/// (Dissociated IPC body types 1 and 0), "flight_data" on the grpc plane (DoGet).
struct FERRY_EXPORT SentMetrics {
  std::string body_type;
  /// Record batches sent, and bytes: message bodies on the shm and ucx planes (what a client
  /// receives or reads beside the metadata), whole FlightData messages on the grpc plane.
  int64_t batches = 0;
  int64_t bytes = 0;
};

/// One plane's figures: "grpc" (DoGet streams), "shm" or "ucx" (Dissociated IPC sessions).
struct FERRY_EXPORT PlaneMetrics {
  std::string plane;
  std::vector<SentMetrics> sent;
  int64_t sessions_active = 0;
  int64_t sessions_total = 0;
  /// Tickets this plane refused (unknown, expired, or asked under another URI; too many
  /// clients on the Dissociated IPC planes).
  int64_t tickets_refused = 0;
  /// Buffers lent to clients (type-1 addresses), those the clients freed, and those the server
  /// took back when a session ended without freeing them; 0 on the grpc plane.
  int64_t lent_buffers = 0;
  int64_t lent_buffers_freed = 0;
  int64_t lent_buffers_reclaimed = 0;
  /// Failures by code: failed sessions on the shm and ucx planes, failed calls of every RPC on
  /// the grpc plane (counted with ServerOptions::metrics only).
  std::map<StatusCode, int64_t> errors;
};

/// One Flight RPC's latency, from its start to its status ("GetFlightInfo", "DoGet", ...;
/// "other" for methods outside the Flight service).
struct FERRY_EXPORT RpcMetrics {
  std::string rpc;
  LatencyHistogram latency;
};

/// A federation peer as this server last found it. A peer is asked only when a caller asks this
/// server (ListFlights, GetFlightInfo, ...): until then `asked` is false.
struct FERRY_EXPORT PeerMetrics {
  std::string uri;
  bool asked = false;
  /// It answered the last question (a refusal of its own counts as an answer).
  bool up = false;
  /// How long the last question took to answer, or to give up on it.
  double latency_seconds = 0;
  /// The last failure's message ("" when the last question was answered).
  std::string last_error;
  int64_t questions = 0;
  int64_t failures = 0;
};

/// The whole snapshot.
struct FERRY_EXPORT ServerMetrics {
  /// "grpc" first, then the fast planes in the order FlightInfo lists them.
  std::vector<PlaneMetrics> planes;
  /// The shared ticket book's issued and expired tickets.
  int64_t tickets_issued = 0;
  int64_t tickets_expired = 0;
  /// One entry per RPC called at least once; empty unless ServerOptions::metrics.
  std::vector<RpcMetrics> rpcs;
  std::vector<PeerMetrics> peers;
};

/// A Dissociated IPC server's running totals as the figures of its plane, named `plane` ("shm"
/// or "ucx"): what a Flight server reports for each of its planes, and what `ferry serve
/// --metrics` reports for a server without Flight. A copy of a few counters.
FERRY_EXPORT PlaneMetrics PlaneMetricsOf(const std::string& plane, const dipc::ServerStats& stats);

}  // namespace ferry::flight
