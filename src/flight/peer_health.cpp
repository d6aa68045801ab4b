// What a federated server last found of each peer.
#include "flight/peer_health.hpp"

namespace ferry::flight::internal {

void PeerHealth::Register(const std::vector<std::string>& peers) {
  std::lock_guard lock(mutex_);
  for (const std::string& peer : peers) {
    if (peers_.count(peer) != 0) continue;
    order_.push_back(peer);
    peers_[peer].uri = peer;
  }
}

void PeerHealth::Record(const std::string& peer, bool reachable, const Status& status,
                        double seconds) {
  std::lock_guard lock(mutex_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  PeerMetrics& p = it->second;
  p.asked = true;
  p.up = reachable;
  p.latency_seconds = seconds;
  ++p.questions;
  if (reachable) {
    p.last_error.clear();
  } else {
    ++p.failures;
    p.last_error = status.ToString();
  }
}

std::vector<PeerMetrics> PeerHealth::Snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<PeerMetrics> out;
  out.reserve(order_.size());
  for (const std::string& peer : order_) out.push_back(peers_.at(peer));
  return out;
}

}  // namespace ferry::flight::internal
