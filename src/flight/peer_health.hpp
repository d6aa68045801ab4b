// Internal to the flight layer: what a federated server last found of each peer (up or down, how
// long it took, the last error), for the "stats" action and the metrics.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/core/status.hpp"
#include "ferry/flight/metrics.hpp"

namespace ferry::flight::internal {

/// Each peer's last answer. Owned by the server state; the federation records into it from the
/// pool's threads once per peer and question (a lock and a map lookup: cold, beside a gRPC call).
/// Thread-safe.
class PeerHealth {
 public:
  /// Name the peers, in the options' order, before any is asked.
  void Register(const std::vector<std::string>& peers);
  /// The peer's answer to one question, after `seconds`: `reachable` (it answered, even with a
  /// refusal of its own) is up; otherwise it is down, and `status` its last error.
  void Record(const std::string& peer, bool reachable, const Status& status, double seconds);
  /// Every peer, in the options' order.
  std::vector<PeerMetrics> Snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> order_;
  std::map<std::string, PeerMetrics> peers_;
};

}  // namespace ferry::flight::internal
