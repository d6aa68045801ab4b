// A client's idle connections between streams (ferry/dipc/connection_pool.hpp).
#include "ferry/dipc/connection_pool.hpp"

#include <utility>

namespace ferry::dipc {

namespace {

// Close each connection, outside the pool's lock: a UCX close waits for its endpoint.
void CloseAll(const std::list<std::shared_ptr<transport::Connection>>& conns) {
  for (const auto& c : conns) c->Close();
}

}  // namespace

ConnectionPool::ConnectionPool(std::chrono::milliseconds max_idle, size_t per_server,
                               std::shared_ptr<Clock> clock)
    : max_idle_(max_idle),
      per_server_(per_server),
      clock_(clock ? std::move(clock) : Clock::Real()) {}

ConnectionPool::~ConnectionPool() { Clear(); }

std::list<ConnectionPool::Idle> ConnectionPool::ExpiredLocked() {
  std::list<Idle> expired;
  const Clock::time_point now = clock_->Now();
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto next = std::next(it);
    if (now - it->since > max_idle_) expired.splice(expired.end(), idle_, it);
    it = next;
  }
  return expired;
}

std::shared_ptr<transport::Connection> ConnectionPool::Take(const std::string& key) {
  std::shared_ptr<transport::Connection> found;
  std::list<Idle> expired;
  {
    std::lock_guard lock(mutex_);
    expired = ExpiredLocked();
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if (it->key != key) continue;
      found = std::move(it->conn);
      idle_.erase(it);
      break;
    }
  }
  std::list<std::shared_ptr<transport::Connection>> closing;
  for (Idle& i : expired) closing.push_back(std::move(i.conn));
  CloseAll(closing);
  return found;
}

void ConnectionPool::Give(const std::string& key, std::shared_ptr<transport::Connection> conn) {
  if (conn == nullptr) return;
  std::list<std::shared_ptr<transport::Connection>> closing;
  {
    std::lock_guard lock(mutex_);
    for (Idle& i : ExpiredLocked()) closing.push_back(std::move(i.conn));
    idle_.push_front(Idle{key, std::move(conn), clock_->Now()});
    size_t same = 0;
    for (auto it = idle_.begin(); it != idle_.end();) {
      auto next = std::next(it);
      if (it->key == key && ++same > per_server_) {
        closing.push_back(std::move(it->conn));
        idle_.erase(it);
      }
      it = next;
    }
  }
  CloseAll(closing);
}

bool ConnectionPool::Holds(const std::string& key) {
  std::list<std::shared_ptr<transport::Connection>> closing;
  bool found = false;
  {
    std::lock_guard lock(mutex_);
    for (Idle& i : ExpiredLocked()) closing.push_back(std::move(i.conn));
    for (const Idle& i : idle_) found = found || i.key == key;
  }
  CloseAll(closing);
  return found;
}

size_t ConnectionPool::idle() {
  std::list<std::shared_ptr<transport::Connection>> closing;
  size_t n = 0;
  {
    std::lock_guard lock(mutex_);
    for (Idle& i : ExpiredLocked()) closing.push_back(std::move(i.conn));
    n = idle_.size();
  }
  CloseAll(closing);
  return n;
}

void ConnectionPool::Clear() {
  std::list<std::shared_ptr<transport::Connection>> closing;
  {
    std::lock_guard lock(mutex_);
    for (Idle& i : idle_) closing.push_back(std::move(i.conn));
    idle_.clear();
  }
  CloseAll(closing);
}

}  // namespace ferry::dipc
