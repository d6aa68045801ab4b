// ferry's Arrow Flight server: every dataset is a flight that any Flight client can list,
// describe and read with DoGet, and whose FlightInfo also offers ferry's fast planes (shared
// memory, UCX) as locations redeemed with the same ticket. A flight may be partitioned: one
// endpoint per partition, each with its own ticket. DoPut stores uploads as datasets; DoAction
// append-partition moves an upload into a flight as its next endpoint.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/clock.hpp"
#include "ferry/core/result.hpp"
#include "ferry/device/async_stream.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/flight/info.hpp"
#include "ferry/flight/metrics.hpp"

namespace ferry::flight {

/// How a Flight server runs. Plain values.
struct FERRY_EXPORT ServerOptions {
  /// Where gRPC listens: HOST:PORT (port 0 picks a free one; port() tells which).
  std::string listen = "127.0.0.1:0";
  /// The bearer token every call must carry (`authorization: Bearer <token>`); empty: none. With
  /// a token, the planes and DoGet honour only issued tickets.
  std::string token;
  /// TLS: the server's certificate chain and private key (PEM text, not paths); both empty for
  /// plain gRPC. With `tls_client_ca`, clients must present a certificate it signed.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  /// The fast planes served beside gRPC, in the order FlightInfo lists them: "shm" and "ucx".
  std::vector<std::string> planes = {"shm", "ucx"};
  /// Where each plane listens (see dipc::ServerOptions::listen); empty: a fresh shared-memory
  /// socket, and UCX on the gRPC host with a free port.
  std::string shm_listen;
  std::string ucx_listen;
  /// Serve each dataset on the planes from memory of its own, written once (dipc Keep): no copy
  /// per client, at the cost of one copy of the dataset per plane.
  bool keep = false;
  /// The planes' other settings (region size, timeouts, body type, most clients); transport,
  /// address, token, tickets and clock are set by the Flight server.
  dipc::ServerOptions plane;
  /// How long a ticket from GetFlightInfo stays valid (the endpoint's expiration_time), by
  /// `clock`.
  std::chrono::seconds ticket_ttl{600};
  /// The most bytes one DoPut may upload (FlightData as received); beyond it the upload fails
  /// with RESOURCE_EXHAUSTED and nothing is stored.
  int64_t max_upload_bytes = int64_t{4} << 30;
  /// The largest body DoGet sends in one FlightData (1 to 1 GiB, the default: half of gRPC's
  /// 2 GiB ceiling); a batch whose body passes it goes as zero-copy slices of whole rows.
  int64_t max_message_body = int64_t{1} << 30;
  /// Federation: other Flight servers (grpc:// or grpc+tls:// URIs) whose flights this server
  /// lists and describes with its own. A flight of the same path on several servers is one
  /// FlightInfo: this server's endpoints first, then each peer's in this order, with the tickets
  /// and locations that peer issued (asked with the caller's token). Static: no discovery.
  std::vector<std::string> peers;
  /// How long a peer may take to answer, by `clock`; past it the call fails with UNAVAILABLE
  /// naming the peer, or, with `allow_partial`, answers without that peer's endpoints and names
  /// it in the FlightInfo's app_metadata. Peers are asked on a pool of threads that lives as long
  /// as the server (4 per peer, at most 32).
  std::chrono::milliseconds peer_timeout{2000};
  bool allow_partial = false;
  /// The certificates to trust for grpc+tls:// peers (PEM text; empty: the system's).
  std::string peer_tls_roots;
  /// Where the server tells what it refused or tolerated, one line each, from any thread (the
  /// planes' lines prefixed "shm plane: ", "ucx plane: "). Not called when `log_sink` is set.
  std::function<void(const std::string&)> log;
  /// Called once, on the thread that starts it, when a drain starts (Drain, BeginDrain or the
  /// drain action): how `ferry serve` learns that a client asked it to drain.
  std::function<void()> on_drain;
  /// Time every RPC and count failed calls by code (a gRPC interceptor: an allocation, two
  /// clock reads and a few relaxed atomic adds per call), for metrics(); the other figures of
  /// metrics() are kept always.
  bool metrics = false;
  /// Where the server's structured records go (ferry/core/log.hpp), every level, from any
  /// thread: what `log` tells, one kDebug "flight_call" record per call (with the caller's trace
  /// when its metadata carried a W3C `traceparent`), and the planes' records
  /// (dipc::ServerOptions::log_sink). Unset: records go to `log` as lines.
  LogSink log_sink;
  /// More members for the "stats" action's answer: called on each such call, from any thread, it
  /// returns a JSON object whose members join the planes' (`{"config": {...}}`); a text that is
  /// not a JSON object is left out. Empty: none.
  std::function<std::string()> stats_extra;
  /// What times tickets, the planes' waits on their clients and the peers' answers. NULL:
  /// Clock::Real(). Tests pass a ManualClock (and test trees' `ferry serve` processes take one
  /// from FERRY_TEST_CLOCK=manual, moved by the advance-clock action: docs/flight.md).
  std::shared_ptr<Clock> clock;
};

/// Running totals of a Flight server.
struct FERRY_EXPORT ServerStats {
  int64_t calls = 0;
  int64_t do_gets = 0;
  int64_t do_puts = 0;
  /// FlightData bytes DoGet handed to gRPC, and DoPut received.
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  /// Calls refused: UNAUTHENTICATED, and tickets that named nothing or had expired.
  int64_t unauthenticated = 0;
  int64_t tickets_refused = 0;
  /// Uploads refused or failed (nothing of them was stored).
  int64_t uploads_failed = 0;
};

/// A running Flight server with its planes. Thread-safe. Stop (or the destructor) ends every
/// call and closes the planes.
class FERRY_EXPORT Server {
 public:
  static Result<std::unique_ptr<Server>> Start(ServerOptions options = {});
  virtual ~Server() = default;

  /// Serve `batches` (struct arrays of `schema`, on any device) as flight `name`. DoGet lends
  /// their memory to gRPC without copying; the planes serve them too. EEXIST if `name` is
  /// served; errors from the planes (Keep) name the plane.
  [[nodiscard]] virtual Status Add(const std::string& name, UniqueSchema schema,
                                   std::vector<UniqueDeviceArray> batches) = 0;
  /// Serve an IPC stream or file (mapped, decoded once with full validation, then lent) as
  /// flight `name`.
  [[nodiscard]] virtual Status AddPath(const std::string& name, const std::string& path) = 0;
  /// Serve `partitions` (each a list of batches of `schema`) as flight `name` with one endpoint
  /// per partition, in this order, each with its own ticket (FlightInfo's `ordered` is true).
  /// Partition 0 is served under `name`, partition i under "NAME/i". EEXIST if a name is taken.
  [[nodiscard]] virtual Status AddPartitioned(
      const std::string& name, UniqueSchema schema,
      std::vector<std::vector<UniqueDeviceArray>> partitions) = 0;
  /// Serve IPC files as flight `name`, one endpoint per file in this order, each file cut
  /// further into endpoints of whole batches of at most `partition_bytes` body bytes when it is
  /// positive. The files' schemas must be equal.
  [[nodiscard]] virtual Status AddPaths(const std::string& name,
                                        const std::vector<std::string>& paths,
                                        int64_t partition_bytes = 0) = 0;
  /// Serve `batches` as the next endpoint of flight `name` (made if it does not exist), so that
  /// a flight can be built from many writers. EINVAL if the schema differs from the flight's.
  /// The new endpoint's index.
  virtual Result<size_t> AppendPartition(const std::string& name, UniqueSchema schema,
                                         std::vector<UniqueDeviceArray> batches) = 0;
  /// Serve what an async producer pushes (the Async C Device Stream Interface) as flight
  /// `name`: fills `*handler`, which the caller hands to the producer and keeps alive until its
  /// release is called. Batches are requested `options.queue_size` ahead, their sync events
  /// waited on, and kept as they arrive; when the producer ends its stream they are served as
  /// Add serves them. The future holds Add's status, or the producer's error (nothing is served
  /// then). The server must outlive the producer's calls.
  Result<std::shared_future<Status>> AddAsync(const std::string& name,
                                              ArrowAsyncDeviceStreamHandler* handler,
                                              AsyncHandlerOptions options = {});
  /// Stop serving `name` on every plane and revoke its tickets: it is no longer listed, described
  /// or redeemed. A client already reading it (DoGet, or a plane's session) holds its memory and
  /// reads to the end; the memory goes with the last such reader. ENOENT if unknown.
  [[nodiscard]] virtual Status Drop(const std::string& name) = 0;
  /// The flights served, sorted.
  virtual std::vector<std::string> names() const = 0;
  /// What GetFlightInfo answers for `name` (a fresh ticket each call).
  virtual Result<FlightInfo> Info(const std::string& name) = 0;

  /// grpc://HOST:PORT, or grpc+tls://, with the port actually bound.
  virtual std::string uri() const = 0;
  virtual int port() const = 0;
  /// The plane serving `transport` ("shm", "ucx"), or NULL if it is not served.
  virtual dipc::Server* plane(const std::string& transport) const = 0;
  /// The tickets every plane and DoGet honour.
  virtual std::shared_ptr<dipc::TicketBook> tickets() const = 0;
  virtual ServerStats stats() const = 0;
  /// Start a drain (flight/drain.cpp), once; later calls do nothing. grpc.health.v1 answers
  /// NOT_SERVING from then on, and new GetFlightInfo, PollFlightInfo, DoGet and DoPut calls and
  /// new sessions on the planes are refused with UNAVAILABLE, saying the server is draining;
  /// calls and sessions in progress run on. Returns at once.
  virtual void BeginDrain() = 0;
  virtual bool draining() const = 0;
  /// BeginDrain, then wait until every call and plane session in progress has ended, or until
  /// `timeout` has passed by the options' clock: true if all ended. Sleeps on condition
  /// variables; Stop then ends what is left.
  virtual bool Drain(std::chrono::milliseconds timeout) = 0;
  /// Every plane's, the tickets', each RPC's (with ServerOptions::metrics) and the federation
  /// peers' figures, for monitoring (include/ferry/flight/metrics.hpp). Cheap: reads counters.
  virtual ServerMetrics metrics() const = 0;
  /// Stop accepting calls, end those in progress and close the planes.
  virtual void Stop() = 0;
};

}  // namespace ferry::flight
