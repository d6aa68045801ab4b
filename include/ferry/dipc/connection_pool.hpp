// Connections a dissociated-IPC client keeps between its streams, so that the next stream to
// the same server skips connecting.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/core/clock.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc {

/// Idle connections by server and connect options. A stream read to its end over a reusable
/// connection (transport::Connection::reusable: ucx:// with ferry=1 to a ferry server) that lent
/// the client nothing comes back here, and the next stream to the same server, with the same
/// options, takes it instead of connecting (a UCX connection costs 10-80 ms of set-up). Shared
/// by the streams of one client (ClientOptions::pool); thread-safe. Each idle connection holds
/// its transport's resources (UCX: a worker and a sleeping progress thread) until it is taken,
/// is older than `max_idle`, or the pool goes; the pool closes what it still holds.
class FERRY_EXPORT ConnectionPool {
 public:
  /// At most `per_server` idle connections for each server and options; one idle for longer than
  /// `max_idle` is closed rather than given out (a ferry server closes one after its own timeout,
  /// 30 s by default). `clock` times the idleness; NULL: Clock::Real().
  explicit ConnectionPool(std::chrono::milliseconds max_idle = std::chrono::seconds(10),
                          size_t per_server = 4, std::shared_ptr<Clock> clock = nullptr);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  /// The most recently returned idle connection filed under `key`, or NULL. The caller owns it
  /// from now on; the server may have closed it meanwhile, which its first request finds.
  std::shared_ptr<transport::Connection> Take(const std::string& key);
  /// File `conn` under `key` for the next stream (closing the oldest idle connection of that key
  /// beyond `per_server`). The caller must be done with it: a stream ended, nothing lent.
  void Give(const std::string& key, std::shared_ptr<transport::Connection> conn);
  /// Whether an idle connection is filed under `key` (one past `max_idle` is not).
  bool Holds(const std::string& key);
  /// Idle connections held now (after closing those past `max_idle`).
  size_t idle();
  /// Close every idle connection.
  void Clear();

 private:
  struct Idle {
    std::string key;
    std::shared_ptr<transport::Connection> conn;
    Clock::time_point since;
  };
  // Take out the connections past max_idle (with mutex_ held), for closing outside it.
  std::list<Idle> ExpiredLocked();

  const std::chrono::milliseconds max_idle_;
  const size_t per_server_;
  const std::shared_ptr<Clock> clock_;
  std::mutex mutex_;
  std::list<Idle> idle_;  // the most recently returned first
};

}  // namespace ferry::dipc
