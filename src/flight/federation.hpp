// Internal to the flight layer: a federated server's peers (ServerOptions::peers), asked for
// their flights on behalf of a caller, and the merge of what they answer with this server's own.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/core/clock.hpp"
#include "ferry/core/result.hpp"
#include "ferry/core/trace.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/info.hpp"
#include "ferry/flight/server.hpp"
#include "flight/peer_health.hpp"
#include "flight/peer_pool.hpp"

namespace ferry::flight::internal {

/// The header a federated server sets on its calls to its peers: a server answers such a call
/// with its own flights only, so that servers that list each other never ask each other again.
inline constexpr const char* kFederatedHeader = "x-ferry-federated";

/// One server's answer about a flight: `peer` is its URI (empty: this server).
struct OwnedInfo {
  std::string peer;
  FlightInfo info;
};

/// `path`'s FlightInfo from the answers of the servers that hold it, in order: the first one's
/// schema (every other must be equal, else kFailedPrecondition naming the peer), every endpoint in
/// order, the sums of the sizes (-1 when one is unknown), `ordered` only when one server holds it
/// all. A peer's "reuse this connection" location becomes that peer's URI, and every peer endpoint
/// lists its owner's URI, so that a client that follows locations reaches the right server.
/// kNotFound when no server holds it.
Result<FlightInfo> MergeInfos(const std::string& path, std::vector<OwnedInfo> answers);

/// The peers of a federated server, asked on behalf of callers. Owned by the Flight service, so
/// it lives as long as the server; thread-safe. Each question asks every peer at once on the
/// federation's PeerPool (threads(): min(kThreadsPerPeer x peers, kMaxThreads), started with it
/// and joined by its destructor) and answers within `peer_timeout` by the options' clock: a peer
/// not heard from by then is unavailable. A connection to a peer is kept for the next question
/// with the same token (a gRPC channel: no TCP or TLS handshake per question), and dropped when
/// a call on it fails.
class Federation {
 public:
  /// Threads per peer: as many questions as this ask every peer at once (a peer that does not
  /// answer holds a thread for up to the peer timeout), and no more threads than kMaxThreads.
  static constexpr size_t kThreadsPerPeer = 4;
  static constexpr size_t kMaxThreads = 32;
  /// Questions waiting for a thread, per thread; past that a question waits for room until its
  /// deadline.
  static constexpr size_t kQueuePerThread = 16;

  /// One peer's answer to a question: its flights, or why there are none.
  struct PeerAnswer {
    std::string peer;
    Status status;
    std::vector<FlightInfo> infos;
  };

  /// `health`, when given, is told each peer's answer to each question (it must outlive this).
  explicit Federation(const ServerOptions& options, PeerHealth* health = nullptr);

  bool empty() const { return peers_.empty(); }
  /// The threads peers are asked on (0 without peers).
  size_t threads() const { return pool_ ? pool_->threads() : 0; }
  /// Flight `path`: `local` (this server's FlightInfo, or its kNotFound) merged with each peer's,
  /// asked with `token` (the caller's bearer token; empty: none). A peer that fails to answer
  /// fails the call with UNAVAILABLE (or its own refusal) naming it; with `allow_partial` the
  /// answer goes without it and names it in app_metadata ({"missing_peers": [{"peer", "error"}]}).
  /// `trace` (the caller's call span, when it sent a traceparent) goes to each peer as its
  /// call's traceparent: the caller's trace, this server's span as the parent.
  Result<FlightInfo> Info(const std::string& path, Result<FlightInfo> local,
                          const std::string& token, const TraceContext& trace = {}) const;
  /// Every flight of this server (`local`) and of each peer: one FlightInfo per path, as Info
  /// merges them, in the order first seen.
  Result<std::vector<FlightInfo>> List(std::vector<FlightInfo> local, const std::string& token,
                                       const TraceContext& trace = {}) const;

 private:
  /// Asks every peer at once: GetFlightInfo(path), or ListFlights when `path` is null. A peer
  /// that has not answered within the peer timeout (by the clock) gets kDeadlineExceeded.
  std::vector<PeerAnswer> Ask(const std::string* path, const std::string& token,
                              const TraceContext& trace) const;
  /// The failure for a peer's `status`, naming it.
  Status PeerFailure(const std::string& peer, const Status& status) const;
  /// Ask `peer` with `token` through its kept connection or, when there is none or a call on
  /// it found the peer unreachable, a fresh one (within what is left until `deadline`).
  PeerAnswer AskPeer(const std::string& peer, const std::optional<std::string>& path,
                     const std::string& token, Clock::time_point deadline,
                     const TraceContext& trace) const;
  /// One question on `client`: GetFlightInfo(path), or ListFlights without a path.
  static PeerAnswer AskOn(Client& client, const std::string& peer,
                          const std::optional<std::string>& path);

  std::vector<std::string> peers_;
  std::chrono::milliseconds timeout_;
  bool allow_partial_;
  std::string tls_roots_;
  std::shared_ptr<Clock> clock_;
  PeerHealth* health_;
  // Kept connections by (peer, token); at most kMaxKept, all dropped when one more is needed.
  static constexpr size_t kMaxKept = 256;
  mutable std::mutex kept_mutex_;
  mutable std::map<std::pair<std::string, std::string>, std::shared_ptr<Client>> kept_;
  // Last: destroyed first, so its threads are joined while everything they use is still here.
  std::unique_ptr<PeerPool> pool_;
};

}  // namespace ferry::flight::internal
