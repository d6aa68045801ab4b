// A federated server's peers: each asked at once with the caller's token, and their answers
// merged with this server's own flights.
#include "flight/federation.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "ferry/flight/client.hpp"
#include "ferry/flight/info.hpp"
#include "flight/call_trace.hpp"

namespace ferry::flight::internal {

namespace {

int64_t SumKnown(int64_t a, int64_t b) { return a < 0 || b < 0 ? -1 : a + b; }

std::string Owner(const std::string& peer) { return peer.empty() ? "this server" : peer; }

// A peer that could not be reached or did not answer in time (as opposed to one that answered
// with a refusal of its own).
bool Unreachable(const Status& status) {
  switch (status.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kCancelled:
      return true;
    default:
      return false;
  }
}

// The key a flight is merged under: its path's elements joined by '/', or its command.
std::string FlightKey(const FlightInfo& info) {
  if (info.path.empty()) return "cmd:" + info.command;
  std::string key;
  for (const std::string& p : info.path) key += (key.empty() ? "" : "/") + p;
  return key;
}

// A peer's endpoint as a client of this server must see it: its "reuse this connection"
// location is the peer's URI, and the peer's URI is among its locations.
void NameOwner(const std::string& peer, Endpoint* e) {
  std::vector<std::string> locations;
  bool named = false;
  for (std::string& l : e->locations) {
    const std::string& uri = l == kReuseConnection ? peer : l;
    if (uri == peer) {
      if (named) continue;
      named = true;
    }
    locations.push_back(uri);
  }
  if (!named) locations.push_back(peer);
  e->locations = std::move(locations);
}

}  // namespace

Result<FlightInfo> MergeInfos(const std::string& path, std::vector<OwnedInfo> answers) {
  if (answers.empty()) {
    return Status::NotFound("no flight named \"" + path + "\" on this server or its peers");
  }
  FlightInfo out;
  out.path = answers[0].info.path;
  out.command = answers[0].info.command;
  out.schema = answers[0].info.schema;
  out.total_records = 0;
  out.total_bytes = 0;
  // Rows from different servers have no order between them.
  out.ordered = answers.size() == 1 && answers[0].info.ordered;
  for (OwnedInfo& a : answers) {
    // Metadata counts: the merged flight answers with one schema for every server's endpoints.
    Result<bool> same = EncodedSchemaEquals(a.info.schema, out.schema, /*check_metadata=*/true);
    if (!same.ok()) {
      return same.status().WithContext(Owner(a.peer) + "'s flight \"" + path + "\"");
    }
    if (!*same) {
      return Status::FailedPrecondition(Owner(a.peer) + " serves flight \"" + path +
                                        "\" with another schema than " + Owner(answers[0].peer));
    }
    out.total_records = SumKnown(out.total_records, a.info.total_records);
    out.total_bytes = SumKnown(out.total_bytes, a.info.total_bytes);
    for (Endpoint& e : a.info.endpoints) {
      if (!a.peer.empty()) NameOwner(a.peer, &e);
      out.endpoints.push_back(std::move(e));
    }
  }
  return out;
}

Federation::Federation(const ServerOptions& options, PeerHealth* health)
    : peers_(options.peers),
      timeout_(options.peer_timeout),
      allow_partial_(options.allow_partial),
      tls_roots_(options.peer_tls_roots),
      clock_(options.clock ? options.clock : Clock::Real()),
      health_(health) {
  if (peers_.empty()) return;
  if (health_ != nullptr) health_->Register(peers_);
  const size_t threads = std::min(kThreadsPerPeer * peers_.size(), kMaxThreads);
  pool_ = std::make_unique<PeerPool>(threads, kQueuePerThread * threads, clock_);
}

namespace {

// One question to every peer: the answers so far, filled in by the pool's threads.
struct Question {
  explicit Question(size_t peers)
      : answers(peers), answered(peers, false), answered_at(peers), left(peers) {}
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Federation::PeerAnswer> answers;
  std::vector<bool> answered;
  std::vector<Clock::time_point> answered_at;  // by the federation's clock
  size_t left;
  bool over = false;  // the asker has taken what there was: later answers are dropped
};

}  // namespace

std::vector<Federation::PeerAnswer> Federation::Ask(const std::string* path,
                                                    const std::string& token,
                                                    const TraceContext& trace) const {
  std::optional<std::string> wanted;
  if (path != nullptr) wanted = *path;
  const Clock::time_point start = clock_->Now();
  const Clock::time_point deadline = clock_->After(timeout_);
  auto question = std::make_shared<Question>(peers_.size());
  auto answer = [question, clock = clock_](size_t i, PeerAnswer a) {
    {
      std::lock_guard lock(question->mutex);
      if (question->over || question->answered[i]) return;
      question->answers[i] = std::move(a);
      question->answered[i] = true;
      question->answered_at[i] = clock->Now();
      --question->left;
    }
    question->changed.notify_all();
  };
  for (size_t i = 0; i < peers_.size(); ++i) {
    const std::string& peer = peers_[i];
    Status queued = pool_->Submit(
        [this, question, answer, i, peer, wanted, token, deadline, trace](bool stopping) {
          bool over = false;
          {
            std::lock_guard lock(question->mutex);
            over = question->over;
          }
          if (stopping) {
            answer(i, PeerAnswer{peer, Status::Unavailable("the server is stopping"), {}});
          } else if (over || clock_->Now() >= deadline) {
            // Taken too late to matter: the question has its answer, or is past its deadline.
            answer(i, PeerAnswer{peer,
                                 Status::DeadlineExceeded("not asked: no thread was free "
                                                          "within the peer timeout"),
                                 {}});
          } else {
            // Each call below carries a gRPC deadline of at most the peer timeout.
            answer(i, AskPeer(peer, wanted, token, deadline, trace));
          }
        },
        deadline);
    if (!queued.ok()) answer(i, PeerAnswer{peer, std::move(queued), {}});
  }
  std::unique_lock lock(question->mutex);
  clock_->WaitUntil(question->changed, lock, deadline, [&] { return question->left == 0; });
  question->over = true;
  std::vector<PeerAnswer> answers(peers_.size());
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (question->answered[i]) {
      answers[i] = std::move(question->answers[i]);
    } else {
      answers[i] = PeerAnswer{
          peers_[i],
          Status::DeadlineExceeded("no answer within " + std::to_string(timeout_.count()) + " ms"),
          {}};
    }
    if (health_ != nullptr) {
      const Clock::time_point end = question->answered[i] ? question->answered_at[i] : deadline;
      const Status& st = answers[i].status;
      health_->Record(peers_[i], st.ok() || !Unreachable(st), st,
                      std::chrono::duration<double>(end - start).count());
    }
  }
  return answers;
}

Federation::PeerAnswer Federation::AskOn(Client& client, const std::string& peer,
                                         const std::optional<std::string>& path) {
  PeerAnswer answer{peer, Status::OK(), {}};
  if (path) {
    Result<FlightInfo> info = client.GetFlightInfo(*path);
    if (info.ok()) {
      answer.infos.push_back(std::move(*info));
    } else {
      answer.status = info.status();
    }
  } else {
    Result<std::vector<FlightInfo>> infos = client.ListFlights();
    if (infos.ok()) {
      answer.infos = std::move(*infos);
    } else {
      answer.status = infos.status();
    }
  }
  return answer;
}

Federation::PeerAnswer Federation::AskPeer(const std::string& peer,
                                           const std::optional<std::string>& path,
                                           const std::string& token, Clock::time_point deadline,
                                           const TraceContext& trace) const {
  // The peer's calls carry the caller's trace, with this server's call span as their parent.
  const OutgoingTraceScope traced(trace);
  const auto key = std::make_pair(peer, token);
  // Each call's gRPC deadline (real time) is the peer timeout, or what is left of it for a second
  // try; the question itself ends at `deadline` by the clock, whichever comes first.
  ClientOptions options;
  options.token = token;
  options.tls_roots = tls_roots_;
  options.timeout = timeout_;
  options.headers = {{kFederatedHeader, "1"}};
  std::shared_ptr<Client> kept;
  {
    std::lock_guard lock(kept_mutex_);
    if (auto it = kept_.find(key); it != kept_.end()) kept = it->second;
  }
  if (kept) {
    PeerAnswer answer = AskOn(*kept, peer, path);
    if (answer.status.ok() || !Unreachable(answer.status)) return answer;
    {
      std::lock_guard lock(kept_mutex_);
      if (auto it = kept_.find(key); it != kept_.end() && it->second == kept) kept_.erase(it);
    }
    // The peer may have restarted: a kept channel waits out gRPC's reconnect backoff, failing
    // at once, where a fresh one connects now. Asked again only within the peer timeout (a
    // kept channel that waited out the timeout has its answer).
    options.timeout = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock_->Now());
    if (options.timeout < timeout_ / 2) return answer;
    Result<std::unique_ptr<Client>> made = Client::Connect(peer, options);
    if (!made.ok()) return PeerAnswer{peer, made.status(), {}};
    return AskOn(**made, peer, path);  // not kept: its calls would have less than the timeout
  }
  Result<std::unique_ptr<Client>> made = Client::Connect(peer, options);
  if (!made.ok()) return PeerAnswer{peer, made.status(), {}};
  std::shared_ptr<Client> fresh = std::move(*made);
  PeerAnswer answer = AskOn(*fresh, peer, path);
  if (answer.status.ok() || !Unreachable(answer.status)) {
    std::lock_guard lock(kept_mutex_);
    if (kept_.size() >= kMaxKept) kept_.clear();
    kept_[key] = std::move(fresh);
  }
  return answer;
}

Status Federation::PeerFailure(const std::string& peer, const Status& status) const {
  if (Unreachable(status)) {
    return Status::Unavailable("peer " + peer + " is unavailable (asked with a " +
                               std::to_string(timeout_.count()) +
                               " ms limit): " + status.message());
  }
  return status.WithContext("peer " + peer);
}

Result<FlightInfo> Federation::Info(const std::string& path, Result<FlightInfo> local,
                                    const std::string& token, const TraceContext& trace) const {
  if (!local.ok() && local.status().code() != StatusCode::kNotFound) return local.status();
  std::vector<OwnedInfo> answers;
  if (local.ok()) answers.push_back({"", std::move(*local)});
  nlohmann::json missing = nlohmann::json::array();
  for (PeerAnswer& a : Ask(&path, token, trace)) {
    if (a.status.ok()) {
      answers.push_back({a.peer, std::move(a.infos.front())});
      continue;
    }
    if (a.status.code() == StatusCode::kNotFound) continue;  // that peer has no such flight
    if (!allow_partial_ || !Unreachable(a.status)) return PeerFailure(a.peer, a.status);
    missing.push_back({{"peer", a.peer}, {"error", a.status.message()}});
  }
  Result<FlightInfo> merged = MergeInfos(path, std::move(answers));
  if (!merged.ok() && merged.status().code() == StatusCode::kNotFound && !missing.empty()) {
    return Status::NotFound(merged.status().message() +
                            " that answered (missing: " + missing.dump() + ")");
  }
  FERRY_RETURN_NOT_OK(merged.status());
  if (!missing.empty()) merged->app_metadata = nlohmann::json{{"missing_peers", missing}}.dump();
  return merged;
}

Result<std::vector<FlightInfo>> Federation::List(std::vector<FlightInfo> local,
                                                 const std::string& token,
                                                 const TraceContext& trace) const {
  std::vector<std::string> order;
  std::map<std::string, std::vector<OwnedInfo>> by_key;
  auto add = [&](const std::string& peer, FlightInfo info) {
    const std::string key = FlightKey(info);
    auto [it, fresh] = by_key.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back({peer, std::move(info)});
  };
  for (FlightInfo& info : local) add("", std::move(info));
  nlohmann::json missing = nlohmann::json::array();
  for (PeerAnswer& a : Ask(nullptr, token, trace)) {
    if (!a.status.ok()) {
      if (!allow_partial_ || !Unreachable(a.status)) return PeerFailure(a.peer, a.status);
      missing.push_back({{"peer", a.peer}, {"error", a.status.message()}});
      continue;
    }
    for (FlightInfo& info : a.infos) add(a.peer, std::move(info));
  }
  std::vector<FlightInfo> out;
  out.reserve(order.size());
  for (const std::string& key : order) {
    FERRY_ASSIGN_OR_RAISE(FlightInfo merged, MergeInfos(key, std::move(by_key[key])));
    if (!missing.empty()) {
      merged.app_metadata = nlohmann::json{{"missing_peers", missing}}.dump();
    }
    out.push_back(std::move(merged));
  }
  return out;
}

}  // namespace ferry::flight::internal
