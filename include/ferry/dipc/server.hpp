// The dissociated-IPC server: serves named datasets to many concurrent clients over one
// transport, metadata as untagged messages and bodies as tagged ones, with memory in flight
// bounded by the shared region (a slow client makes the server wait, never grow).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/core/clock.hpp"
#include "ferry/core/host_buffer.hpp"
#include "ferry/core/log.hpp"
#include "ferry/core/result.hpp"
#include "ferry/device/device.hpp"
#include "ferry/dipc/dataset.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/dipc/tickets.hpp"
#include "ferry/dipc/uri.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc {

/// How a server runs. Plain values.
struct FERRY_EXPORT ServerOptions {
  /// "shm" or "ucx".
  std::string transport = "shm";
  /// Where to listen (a socket path, "@name" for an abstract socket, or host:port); empty picks
  /// a fresh one.
  std::string listen;
  /// kBufferList sends (address, length) pairs into memory the client reads (in place over
  /// shared memory, with RMA gets over UCX); kPacked sends each body as one tagged message.
  BodyType body_type = BodyType::kBufferList;
  /// The shared region's size: the most body bytes in flight, all clients together (datasets
  /// served from memory of their own, Keep, do not count).
  int64_t region_bytes = int64_t{256} << 20;
  /// How long the server waits on a client: for its request, for room in the region, for its
  /// free_data and its close at the end; and how long a send may wait for the client to take
  /// it. A stopped client fails its session after this long. The waits for room and for the end
  /// are timed by `clock`; those on the connection (the request, a send) by the transport.
  std::chrono::milliseconds timeout{30000};
  /// The largest message a client may send (want_data with its ticket, free_data).
  int64_t max_request_bytes = int64_t{1} << 20;
  /// The most clients served at once; a client beyond it is refused (its connection closed).
  int max_clients = 256;
  uint64_t want_data_tag = kDefaultWantDataTag;
  uint64_t free_data_tag = kDefaultFreeDataTag;
  /// How bodies are written (compression, alignment).
  ipc::WriteOptions write;
  /// A secret that authenticates clients of the control plane (Flight); empty for none. With a
  /// token, the data plane honours only tickets the server issued (IssueTicket): unguessable,
  /// bound to one dataset, expiring. Without one, a ticket is a dataset's name.
  std::string token;
  /// How long an issued ticket stays valid, by the book's clock.
  std::chrono::seconds ticket_ttl{600};
  /// Where issued tickets are kept. Servers given the same book honour each other's tickets (a
  /// Flight service's planes); NULL: a book of the server's own, on `clock`.
  std::shared_ptr<TicketBook> tickets;
  /// What times the server's waits on its clients (and its own book's tickets). NULL: the
  /// book's clock when a book is given, else Clock::Real(). Tests pass a ManualClock.
  std::shared_ptr<Clock> clock;
  /// Where the server tells what it tolerated or refused (an unknown address in free_data, an
  /// unknown ticket), one line each, from any thread: the message of each record of kInfo or
  /// above. Unset: nowhere. Not called when `log_sink` is set.
  std::function<void(const std::string&)> log;
  /// Whether Start opens the doors at once. False: Start binds the address (so uri() is known)
  /// but takes no client until Open(), so that a server can be filled before anyone reads it;
  /// a client that connects meanwhile waits to be taken (within its own timeout).
  bool accept = true;
  /// Where the server's structured records go (ferry/core/log.hpp), every level, from any
  /// thread: besides what `log` tells, each session's start and end ("session_start",
  /// "session_end", kDebug and kInfo), with its id, peer, plane (the transport) and, when a
  /// trace is known (the client's hello, else the ticket's), the trace id and the session's own
  /// span id. Unset: records go to `log` as lines.
  LogSink log_sink;
};

/// Running totals, for progress and tests.
struct FERRY_EXPORT ServerStats {
  int64_t clients_accepted = 0;
  int64_t clients_active = 0;
  int64_t batches_sent = 0;
  int64_t body_bytes_sent = 0;
  /// Body bytes in the shared region waiting for free_data.
  int64_t bytes_in_flight = 0;
  /// Sessions that ended with an error (a bad peer, a dataset error).
  int64_t sessions_failed = 0;
  /// Requests refused: an unknown ticket, a ticket asked for under another URI, too many clients.
  int64_t tickets_refused = 0;
  /// Type-1 addresses lent to clients, and those the clients freed.
  int64_t addresses_lent = 0;
  int64_t addresses_freed = 0;
  /// Lent addresses the server freed itself, because their client closed, failed or was cut
  /// off holding them: lent - freed - reclaimed is what clients hold now.
  int64_t addresses_reclaimed = 0;
  /// Addresses in free_data that the client did not hold (logged, then ignored).
  int64_t unknown_frees = 0;
  /// Datasets from IPC files (Add of Dataset::FromPath) lent to clients from the file's own
  /// pages, and those that could not be with body type 1 (compressed or unaligned bodies): these
  /// are read and copied for each client, as every dataset is with packed bodies.
  int64_t files_lent = 0;
  int64_t files_copied = 0;
  /// Packed (type-0) bodies sent straight from their file: one range of the file's pages, with
  /// no per-buffer pieces and no copy.
  int64_t bodies_from_file = 0;
  /// Type-1 bodies a producer wrote in the shared region itself (region_allocator()), lent to
  /// their client as they are: no copy per client.
  int64_t bodies_lent_in_place = 0;
  /// Requests served on a connection that had served a stream before: a ferry client keeps a
  /// connection whose stream lent it nothing for its next stream (ClientOptions::pool).
  int64_t requests_reused = 0;
  /// Of batches_sent and body_bytes_sent, those sent as packed (type-0) bodies; the rest went as
  /// buffer lists (type 1).
  int64_t packed_batches_sent = 0;
  int64_t packed_body_bytes_sent = 0;
  /// Failed sessions by the code of their error (only codes seen; they sum to sessions_failed).
  std::map<StatusCode, int64_t> session_errors;
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
  /// Serve `dataset` under `name` from memory of its own: its packed bodies are written there
  /// once, now (memory: the dataset's body bytes), and every client gets them without a copy:
  /// type-1 pairs lent into it (clients' free_data only return the loan), or type-0 bodies sent
  /// whole from it. That memory gets its own URI (uri(name)) with its own remote_handle. Errors
  /// come from reading the dataset.
  [[nodiscard]] virtual Status Keep(const std::string& name, std::shared_ptr<Dataset> dataset) = 0;
  /// Serve `dataset` under `name` from one allocation on `device` (a CUDA device): its bodies
  /// are copied there once, now, through the device layer, and lent to clients on this host by
  /// the allocation's CUDA IPC handle; uri(name) carries it as remote_handle (with
  /// kCudaIpcParameter) and pairs are offsets from the allocation's base. Under uri() (the
  /// shared region's) the dataset is still served from host memory, for clients without CUDA or
  /// on other hosts. Needs body type 1 and no compression.
  [[nodiscard]] virtual Status KeepOnDevice(const std::string& name,
                                            std::shared_ptr<Dataset> dataset, Device& device) = 0;
  /// The URI a client reads `name` with, both streams on one connection: scheme, address,
  /// want_data and free_data, the remote_handle of the memory `name` is served from, and
  /// ferry=1. With no name (or a name served from the shared region) it is the shared region's.
  virtual Uri uri(const std::string& name = "") const = 0;
  /// The split shape's two URIs for `name`: metadata from one, bodies (and free_data, and the
  /// remote_handle) from the other.
  virtual Uri metadata_uri(const std::string& name = "") const = 0;
  virtual Uri data_uri(const std::string& name = "") const = 0;
  /// Serve a connection the caller made (a custom transport, a test's in-process pair) as if
  /// the listener had accepted it.
  virtual void Serve(std::unique_ptr<transport::Connection> connection) = 0;
  /// A ticket for dataset `name`: 128 random bits (32 hex digits), valid for `ttl` (0: the
  /// options' ticket_ttl) on every URI of the dataset. ENOENT for an unknown name.
  virtual Result<std::string> IssueTicket(const std::string& name,
                                          std::chrono::seconds ttl = std::chrono::seconds(0)) = 0;
  /// Extend an issued ticket by `ttl` (0: ticket_ttl) from now. ENOENT if it is unknown or
  /// expired.
  [[nodiscard]] virtual Status RefreshTicket(
      const std::string& ticket, std::chrono::seconds ttl = std::chrono::seconds(0)) = 0;
  /// Stop serving `name` and revoke its tickets. ENOENT for an unknown name. A client already
  /// reading it holds the dataset (and a kept region) and reads to the end; the memory goes with
  /// the last such reader.
  [[nodiscard]] virtual Status Remove(const std::string& name) = 0;
  /// End every session that redeemed `ticket` and is still serving (Flight's CancelFlightInfo):
  /// its connection is aborted and the addresses lent to it are reclaimed at once, as Stop does
  /// for all. How many sessions there were. Revoking the ticket is the book's (TicketBook::Cancel).
  virtual int64_t CancelTicket(const std::string& ticket) = 0;
  /// How many clients are reading `name` now (0 for an unknown name).
  virtual int64_t readers(const std::string& name) const = 0;
  /// The book this server's tickets are issued in (the options' book, or its own).
  virtual std::shared_ptr<TicketBook> tickets() const = 0;
  /// Memory of the shared region for a producer that builds its batches where clients read them
  /// (ArrayBuilder::Make(schema, allocator.get())): a type-1 body whose every buffer lies there is
  /// lent to its client as it is, not copied, and the batch is released (on a server thread) once
  /// that client frees it or goes. Its blocks count against region_bytes (bytes_in_flight) until
  /// freed, and an allocation waits up to `timeout` for room. Shared: it keeps the region mapped
  /// while any holder has it. NULL where bodies are packed (body_type kPacked).
  virtual std::shared_ptr<Allocator> region_allocator() const = 0;
  virtual ServerStats stats() const = 0;
  /// Wait up to `timeout` until no client is being served: each session ended on its own (a
  /// client that closed is let finish; nothing is cut off). True if none is left. Sleeps on a
  /// condition variable, so it costs nothing while it waits.
  virtual bool AwaitIdle(std::chrono::milliseconds timeout) = 0;
  /// Start a drain: every request that arrives from now on is refused with UNAVAILABLE (a
  /// message saying the server is draining; ferry's clients read it), while the sessions already
  /// serving run to their end. Cannot be undone; Stop still ends everything. Costs one flag.
  virtual void Drain() = 0;
  virtual bool draining() const = 0;
  /// Wait until no client is being served or the options' clock reaches `deadline`: true if none
  /// is left. As AwaitIdle, on a condition variable, but timed by the injected clock (a drain's
  /// wait, which a test's ManualClock ends).
  virtual bool AwaitIdleUntil(Clock::time_point deadline) = 0;
  /// Start taking clients, for a server started with `accept` false (a no-op otherwise, and
  /// after the first call). Costs one thread.
  virtual void Open() = 0;
  /// The last session error, for logs ("" when none).
  virtual std::string last_error() const = 0;
  virtual void Stop() = 0;
};

}  // namespace ferry::dipc
