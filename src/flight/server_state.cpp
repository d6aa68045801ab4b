// The Flight server's shared state: flights on every plane, tickets, and FlightInfo.
#include "flight/server_state.hpp"

#include <cerrno>

namespace ferry::flight::internal {

Status ServerState::Add(const std::shared_ptr<Flight>& flight) {
  std::lock_guard lock(change_mutex_);
  FERRY_RETURN_NOT_OK(catalogue.Insert(flight));
  for (size_t i = 0; i < planes.size(); ++i) {
    dipc::Server& plane = *planes[i].second;
    Status st;
    if (options.keep) {
      st = plane.Keep(flight->name, flight->dataset);
    } else {
      plane.Add(flight->name, flight->dataset);
    }
    if (!st.ok()) {
      for (size_t j = 0; j < i; ++j) (void)planes[j].second->Remove(flight->name);
      catalogue.ForceErase(flight->name);
      return st.WithContext("serving \"" + flight->name + "\" on the " + planes[i].first +
                            " plane");
    }
  }
  return Status::OK();
}

Status ServerState::Drop(const std::string& name) {
  std::lock_guard lock(change_mutex_);
  std::shared_ptr<Flight> flight = catalogue.Find(name);
  if (flight == nullptr) return Status(ENOENT, "no flight named \"" + name + "\"");
  std::string busy;
  int64_t total = 0;
  const int64_t streams = flight->readers.use_count() - 1;  // less the flight's own
  if (streams > 0) busy += std::to_string(streams) + " over gRPC";
  total += std::max<int64_t>(streams, 0);
  for (const auto& [transport, plane] : planes) {
    const int64_t n = plane->readers(name);
    if (n > 0) busy += (busy.empty() ? "" : ", ") + std::to_string(n) + " over " + transport;
    total += n;
  }
  if (total > 0) {
    return Status(EBUSY, "flight \"" + name + "\" is being read by " + std::to_string(total) +
                             " client(s) (" + busy + "); drop it when they are done");
  }
  flight.reset();
  FERRY_RETURN_NOT_OK(catalogue.Erase(name));
  for (const auto& [transport, plane] : planes) {
    // A client that started in between keeps its own reference: it finishes reading.
    const Status st = plane->Remove(name);
    if (!st.ok()) {
      std::string line = "dropping \"" + name + "\" on the ";
      line += transport;
      line += " plane: ";
      line += st.message();
      Log(line);
    }
  }
  tickets->Revoke(name);
  return Status::OK();
}

Result<FlightInfo> ServerState::Info(const std::string& name) {
  std::shared_ptr<Flight> flight = catalogue.Find(name);
  if (flight == nullptr) return Status(ENOENT, "no flight named \"" + name + "\"");
  FlightInfo info;
  info.path = {name};
  info.schema = flight->schema;
  info.total_records = flight->records;
  info.total_bytes = flight->bytes;
  info.ordered = true;
  Endpoint e;
  const auto ttl = options.ticket_ttl;
  FERRY_ASSIGN_OR_RAISE(e.ticket, tickets->Issue(name, std::chrono::steady_clock::now() + ttl));
  e.expiration = std::chrono::system_clock::now() + ttl;
  for (const auto& [transport, plane] : planes) e.locations.push_back(plane->uri(name).ToString());
  e.locations.emplace_back(kReuseConnection);
  info.endpoints.push_back(std::move(e));
  return info;
}

Result<std::shared_ptr<Flight>> ServerState::Redeem(const std::string& ticket) {
  std::string name;
  Result<std::string> issued = tickets->Resolve(ticket);
  if (issued.ok()) {
    name = *issued;
  } else if (options.token.empty() && issued.status().code() == ENOENT) {
    name = ticket;  // without a token, a ticket may be the flight's name, as on the planes
  } else {
    ++tickets_refused;
    return issued.status();
  }
  std::shared_ptr<Flight> flight = catalogue.Find(name);
  if (flight == nullptr) {
    ++tickets_refused;
    if (issued.ok()) return Status(ENOENT, "the ticket's flight \"" + name + "\" was dropped");
    return Status(ENOENT, "unknown ticket: no issued ticket and no flight has this name");
  }
  return flight;
}

void ServerState::Log(const std::string& line) const {
  if (options.log) options.log(line);
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

bool ServerState::WaitIdle(std::chrono::milliseconds limit) {
  std::unique_lock lock(live_mutex_);
  return idle_.wait_for(lock, limit, [&] { return live_ == 0; });
}

}  // namespace ferry::flight::internal
