// The dissociated-IPC server: serves named datasets to many concurrent clients over one
// transport, metadata as untagged messages and bodies as tagged ones, with memory in flight
// bounded by the shared region (a slow client makes the server wait, never grow).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/dipc/dataset.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/dipc/uri.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::dipc {

/// How a server runs. Plain values.
struct FERRY_EXPORT ServerOptions {
  /// "shm" or "ucx".
  std::string transport = "shm";
  /// Where to listen (a socket path, "@name" for an abstract socket, or host:port); empty picks
  /// a fresh one.
  std::string address;
  /// kBufferList sends (offset, length) pairs into the shared region (the client reads in
  /// place); kPacked sends each body as one tagged message.
  BodyType body_type = BodyType::kBufferList;
  /// The shared region's size: the most body bytes in flight, all clients together.
  int64_t region_bytes = int64_t{256} << 20;
  /// How long a body may wait for room in the region, and a client for its first request.
  std::chrono::milliseconds wait_timeout{30000};
  uint64_t want_data_tag = kDefaultWantDataTag;
  uint64_t free_data_tag = kDefaultFreeDataTag;
  uint64_t data_want_tag = kDefaultDataWantTag;
  /// How bodies are written (compression, alignment).
  ipc::WriteOptions write;
};

/// Running totals, for progress and tests.
struct FERRY_EXPORT ServerStats {
  int64_t clients_accepted = 0;
  int64_t clients_active = 0;
  int64_t batches_sent = 0;
  int64_t body_bytes_sent = 0;
  /// Body bytes in the region waiting for free_data.
  int64_t bytes_in_flight = 0;
  /// Sessions that ended with an error (a bad peer, a dataset error).
  int64_t sessions_failed = 0;
};

/// A running server: a thread accepts clients; each client gets a session thread. Stop (or the
/// destructor) closes the listener and every session and frees what they held.
class FERRY_EXPORT Server {
 public:
  static Result<std::unique_ptr<Server>> Start(ServerOptions options = {});
  virtual ~Server() = default;
  /// Serve `dataset` under `name` (the ticket clients send), read afresh for each client (with
  /// type-1 bodies, copied into the shared region per client). Replaces an earlier one.
  virtual void Add(const std::string& name, std::shared_ptr<Dataset> dataset) = 0;
  /// Serve `dataset` under `name` from a region of its own: its bodies are written there once,
  /// now (memory: the dataset's body bytes), and lent to every client without copying; clients'
  /// free_data only return the loan. Needs body type 1. Errors come from reading the dataset.
  [[nodiscard]] virtual Status Keep(const std::string& name, std::shared_ptr<Dataset> dataset) = 0;
  /// The URI clients connect with: scheme, address, want_data and free_data.
  virtual Uri uri() const = 0;
  /// The data channel's URI, for clients that keep metadata and bodies on two connections.
  virtual Uri data_uri() const = 0;
  virtual ServerStats stats() const = 0;
  /// The last session error, for logs ("" when none).
  virtual std::string last_error() const = 0;
  virtual void Stop() = 0;
};

}  // namespace ferry::dipc
