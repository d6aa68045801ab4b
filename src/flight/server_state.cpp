// The Flight server's shared state: flights and their partitions on every plane, tickets, and
// FlightInfo.
#include "flight/server_state.hpp"

#include <cerrno>
#include <nlohmann/json.hpp>

#include "ferry/flight/info.hpp"
#include "flight/drain.hpp"

namespace ferry::flight::internal {

Status ServerState::Serve(const std::vector<std::shared_ptr<Partition>>& parts) {
  for (size_t i = 0; i < planes.size(); ++i) {
    dipc::Server& plane = *planes[i].second;
    for (size_t k = 0; k < parts.size(); ++k) {
      Status st;
      if (options.keep) {
        st = plane.Keep(parts[k]->name, parts[k]->dataset);
      } else {
        plane.Add(parts[k]->name, parts[k]->dataset);
      }
      if (!st.ok()) {
        for (size_t j = 0; j <= i; ++j) {
          const size_t served = j < i ? parts.size() : k;
          for (size_t m = 0; m < served; ++m) (void)planes[j].second->Remove(parts[m]->name);
        }
        return st.WithContext("serving \"" + parts[k]->name + "\" on the " + planes[i].first +
                              " plane");
      }
    }
  }
  return Status::OK();
}

Status ServerState::Add(const std::shared_ptr<Flight>& flight) {
  std::lock_guard lock(change_mutex_);
  FERRY_RETURN_NOT_OK(catalogue.Insert(flight));
  Status st = Serve(flight->partitions);
  if (!st.ok()) catalogue.ForceErase(flight->name);
  return st;
}

Result<size_t> ServerState::Append(const std::string& name, const std::shared_ptr<Partition>& part,
                                   const std::string& schema) {
  std::lock_guard lock(change_mutex_);
  return AppendLocked(name, part, schema);
}

Result<size_t> ServerState::AppendLocked(const std::string& name,
                                         const std::shared_ptr<Partition>& part,
                                         const std::string& schema) {
  std::shared_ptr<Flight> old = catalogue.Find(name);
  const size_t index = old == nullptr ? 0 : old->partitions.size();
  part->name = PartitionName(name, index);
  if (catalogue.Taken(part->name) || (old == nullptr && catalogue.Taken(name))) {
    return Status::AlreadyExists("partition " + std::to_string(index) + " of \"" + name +
                                 "\" would be \"" + part->name + "\", which another flight has");
  }
  if (old != nullptr) {
    // Metadata counts: the flight answers with one schema for all its partitions.
    FERRY_ASSIGN_OR_RAISE(bool same, EncodedSchemaEquals(schema, old->schema, true));
    if (!same) {
      return Status::Invalid("the partition's schema differs from flight \"" + name +
                             "\"'s: every partition of a flight has the same schema");
    }
  }
  auto flight = std::make_shared<Flight>();
  flight->name = name;
  flight->schema = old != nullptr ? old->schema : schema;
  if (old != nullptr) flight->partitions = old->partitions;
  flight->partitions.push_back(part);
  FERRY_RETURN_NOT_OK(Serve({part}));
  if (old == nullptr) {
    const Status st = catalogue.Insert(flight);
    if (!st.ok()) {
      for (const auto& [transport, plane] : planes) (void)plane->Remove(part->name);
      return st;
    }
  } else {
    catalogue.Replace(flight);
  }
  return index;
}

Result<size_t> ServerState::AppendFrom(const std::string& name, const std::string& source) {
  std::lock_guard lock(change_mutex_);
  if (source == name) return Status::Invalid("a flight cannot be appended to itself");
  std::shared_ptr<Flight> from = catalogue.Find(source);
  if (from == nullptr) return Status::NotFound("no flight named \"" + source + "\" to append");
  if (from->partitions.size() != 1) {
    return Status::Invalid("flight \"" + source + "\" has " +
                           std::to_string(from->partitions.size()) +
                           " partitions; only a flight of one (an upload) can be appended");
  }
  FERRY_RETURN_NOT_OK(DropLocked(source));
  // The same dataset, served again under the partition's name: nothing is copied.
  auto part = std::make_shared<Partition>();
  part->dataset = from->partitions[0]->dataset;
  part->records = from->partitions[0]->records;
  part->bytes = from->partitions[0]->bytes;
  Result<size_t> index = AppendLocked(name, part, from->schema);
  if (!index.ok()) {
    // Put the upload back as it was, so that nothing is lost.
    if (catalogue.Insert(from).ok() && !Serve(from->partitions).ok()) {
      catalogue.ForceErase(source);
    }
  }
  return index;
}

Status ServerState::Drop(const std::string& name) {
  std::lock_guard lock(change_mutex_);
  return DropLocked(name);
}

Status ServerState::DropLocked(const std::string& name) {
  std::shared_ptr<Flight> flight = catalogue.Find(name);
  if (flight == nullptr) return Status::NotFound("no flight named \"" + name + "\"");
  std::vector<std::string> parts;
  for (const auto& p : flight->partitions) parts.push_back(p->name);
  flight.reset();
  FERRY_RETURN_NOT_OK(catalogue.Erase(name));
  for (const std::string& part : parts) {
    for (const auto& [transport, plane] : planes) {
      // A client reading it keeps its own reference: it finishes reading.
      const Status st = plane->Remove(part);
      if (!st.ok()) {
        std::string line = "dropping \"" + part + "\" on the ";
        line += transport;
        line += " plane: ";
        line += st.message();
        Log("drop_failed", line);
      }
    }
    tickets->Revoke(part);
  }
  return Status::OK();
}

Result<FlightInfo> ServerState::Info(const std::string& name, const TraceContext& trace) {
  std::shared_ptr<Flight> flight = catalogue.Find(name);
  if (flight == nullptr) return Status::NotFound("no flight named \"" + name + "\"");
  FlightInfo info;
  info.path = {name};
  info.schema = flight->schema;
  info.total_records = flight->records();
  info.total_bytes = flight->bytes();
  // The partitions are kept in the order they were given or appended: the data's order.
  info.ordered = true;
  const Clock& clock = *tickets->clock();
  for (const auto& part : flight->partitions) {
    Endpoint e;
    const Clock::time_point expires = clock.After(options.ticket_ttl);
    FERRY_ASSIGN_OR_RAISE(e.ticket, tickets->Issue(part->name, expires, trace));
    e.expiration = clock.ToSystem(expires);
    for (const auto& [transport, plane] : planes) {
      e.locations.push_back(plane->uri(part->name).ToString());
    }
    e.locations.emplace_back(kReuseConnection);
    info.endpoints.push_back(std::move(e));
  }
  return info;
}

Result<std::shared_ptr<Partition>> ServerState::Redeem(const std::string& ticket) {
  std::string name;
  bool issued_here = false;
  Result<std::string> issued = tickets->Resolve(ticket, &issued_here);
  if (issued.ok()) {
    name = *issued;
  } else if (options.token.empty() && !issued_here) {
    name = ticket;  // without a token, a ticket may be a partition's name, as on the planes
  } else {
    ++tickets_refused;
    return issued.status();
  }
  std::shared_ptr<Partition> part = catalogue.FindPartition(name);
  if (part == nullptr) {
    ++tickets_refused;
    if (issued.ok()) return Status::NotFound("the ticket's flight \"" + name + "\" was dropped");
    return Status::NotFound("unknown ticket: no issued ticket and no flight has this name");
  }
  return part;
}

void ServerState::Log(LogRecord record) const {
  if (!options.log_sink && !options.log) return;
  if (record.plane.empty()) record.plane = "grpc";
  EmitLog(options.log_sink, options.log, record);
}

void ServerState::Log(const char* event, const std::string& message,
                      const std::string& peer) const {
  LogRecord r;
  r.event = event;
  r.message = message;
  r.peer = peer;
  Log(std::move(r));
}

std::string ServerState::StatsJson() const {
  nlohmann::json doc = nlohmann::json::object();
  doc["grpc"] = {{"do_gets", do_gets.load()},
                 {"bytes_sent", bytes_sent.load()},
                 {"do_puts", do_puts.load()},
                 {"bytes_received", bytes_received.load()}};
  for (const auto& [transport, plane] : planes) {
    const dipc::ServerStats st = plane->stats();
    doc[transport] = {{"clients", st.clients_accepted},
                      {"requests_reused", st.requests_reused},
                      {"batches_sent", st.batches_sent},
                      {"body_bytes_sent", st.body_bytes_sent},
                      {"addresses_lent", st.addresses_lent}};
  }
  DescribeServer(*this, &doc);
  nlohmann::json peers = nlohmann::json::array();
  for (const PeerMetrics& p : peer_health.Snapshot()) {
    // "up" is null until the peer was first asked (peers are asked on a caller's behalf).
    peers.push_back({{"uri", p.uri},
                     {"up", p.asked ? nlohmann::json(p.up) : nlohmann::json(nullptr)},
                     {"latency_seconds", p.latency_seconds},
                     {"last_error", p.last_error}});
  }
  doc["peers"] = std::move(peers);
  if (options.stats_extra) {
    const nlohmann::json extra = nlohmann::json::parse(options.stats_extra(), nullptr, false);
    if (extra.is_object()) doc.update(extra);
  }
  return doc.dump();
}

void ServerState::CallStarted() {
  std::lock_guard lock(live_mutex_);
  ++live_;
  ++calls;
}

void ServerState::CallDone() {
  std::lock_guard lock(live_mutex_);
  if (--live_ == 0) idle_.notify_all();
}

bool ServerState::WaitIdleUntil(Clock::time_point deadline) {
  std::unique_lock lock(live_mutex_);
  return options.clock->WaitUntil(idle_, lock, deadline, [&] { return live_ == 0; });
}

bool ServerState::WaitIdle(std::chrono::milliseconds limit) {
  std::unique_lock lock(live_mutex_);
  return idle_.wait_for(lock, limit, [&] { return live_ == 0; });
}

}  // namespace ferry::flight::internal
