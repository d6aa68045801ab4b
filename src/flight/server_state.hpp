// Internal to the flight layer: what a Flight server's calls share: its options, its catalogue of
// flights, its planes (a dissociated-IPC server per fast transport) and the tickets they all
// honour, and running totals.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ferry/core/log.hpp"
#include "ferry/core/trace.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/dipc/tickets.hpp"
#include "ferry/flight/metrics.hpp"
#include "ferry/flight/server.hpp"
#include "flight/active_reads.hpp"
#include "flight/catalogue.hpp"
#include "flight/peer_health.hpp"
#include "flight/rpc_metrics.hpp"
#include "flight/sessions.hpp"

namespace ferry::flight::internal {

/// Owned by the server; outlives every call (Stop waits for the last one).
struct ServerState {
  ServerOptions options;
  std::shared_ptr<dipc::TicketBook> tickets;
  /// (transport, server), in the order FlightInfo lists them.
  std::vector<std::pair<std::string, std::unique_ptr<dipc::Server>>> planes;
  Catalogue catalogue;
  std::atomic<int64_t> calls{0}, do_gets{0}, do_puts{0}, bytes_sent{0}, bytes_received{0},
      unauthenticated{0}, tickets_refused{0}, uploads_failed{0};
  /// Drain and health (flight/drain.hpp): set once a drain starts; the server's BeginDrain (which
  /// the drain action calls); when the server started, by the options' clock.
  std::atomic<bool> draining{false};
  std::function<void()> begin_drain;
  Clock::time_point started{};
  /// DoGet's record batches sent and its streams in progress (for the metrics).
  std::atomic<int64_t> batches_sent{0}, do_gets_active{0};
  /// The federation peers' last answers (server_metrics.cpp reads them).
  PeerHealth peer_health;
  /// The clients' session options (standard_actions.cpp) and the DoGet streams by ticket, which
  /// CancelFlightInfo ends.
  SessionTable sessions;
  ActiveReads active_reads;
  /// Each RPC's latency and failures; NULL unless options.metrics.
  std::unique_ptr<RpcMetricsTable> rpc_metrics;

  /// Serve `flight` in the catalogue and on every plane; on a plane's failure nothing stays.
  Status Add(const std::shared_ptr<Flight>& flight);
  /// Serve `part` (made by MakePartition, whose `schema` it has) as the next partition of flight
  /// `name`, made if there is none; it is named here. EINVAL when the schema differs from the
  /// flight's. The partition's index.
  Result<size_t> Append(const std::string& name, const std::shared_ptr<Partition>& part,
                        const std::string& schema);
  /// Move flight `source` (one partition: an upload) into flight `name` as its next partition,
  /// without a copy (the DoAction append-partition). On a failure `source` stays as it was.
  Result<size_t> AppendFrom(const std::string& name, const std::string& source);
  /// Stop serving `name` everywhere; those reading it hold their partitions and finish.
  Status Drop(const std::string& name);
  /// GetFlightInfo's answer: a fresh ticket valid on every location, kept with `trace` (the
  /// call's span: the parent of the sessions that redeem it).
  Result<FlightInfo> Info(const std::string& name, const TraceContext& trace = {});
  /// The partition a DoGet ticket names: an issued ticket, or (with no token) a partition's name.
  Result<std::shared_ptr<Partition>> Redeem(const std::string& ticket);
  /// Tell the options' log sink (or log lines), if any.
  void Log(LogRecord record) const;
  /// A kInfo record of `event` on the gRPC plane.
  void Log(const char* event, const std::string& message, const std::string& peer = {}) const;
  /// The DoAction "stats" answer: each plane's running totals as JSON, {"grpc": {...}, "shm":
  /// {...}, "ucx": {...}}, so that a caller can tell which plane its reads took.
  std::string StatsJson() const;
  /// Server::metrics(): every plane's, the tickets', the RPCs' and the peers' figures
  /// (server_metrics.cpp).
  ServerMetrics Metrics() const;

  /// Calls in progress: each reactor counts itself from construction to OnDone, so Stop can
  /// wait for the last before the state goes.
  void CallStarted();
  void CallDone();
  /// Wait (at most `limit`) until no call is in progress.
  bool WaitIdle(std::chrono::milliseconds limit);
  /// Wait until no call is in progress or the options' clock reaches `deadline` (a drain's
  /// wait). True if none is left.
  bool WaitIdleUntil(Clock::time_point deadline);

 private:
  /// Add each partition on every plane; on a failure, none stays on any plane.
  Status Serve(const std::vector<std::shared_ptr<Partition>>& parts);
  /// Append and Drop with change_mutex_ held.
  Result<size_t> AppendLocked(const std::string& name, const std::shared_ptr<Partition>& part,
                              const std::string& schema);
  Status DropLocked(const std::string& name);
  std::mutex change_mutex_;  // Add and Drop, across the catalogue and the planes
  std::mutex live_mutex_;
  std::condition_variable idle_;
  int64_t live_ = 0;
};

}  // namespace ferry::flight::internal
