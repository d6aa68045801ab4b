// Internal to the dissociated-IPC server: its shared state, and one client's session.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dipc/block_pool.hpp"
#include "dipc/catalogue.hpp"
#include "dipc/distinct_addresses.hpp"
#include "dipc/loan_book.hpp"
#include "dipc/loan_window.hpp"
#include "dipc/region_allocator.hpp"
#include "dipc/spare_nodes.hpp"
#include "ferry/core/log.hpp"
#include "ferry/core/trace.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc::internal {

/// One slot per StatusCode value (kIOError is the last), for counts by code.
inline constexpr size_t kStatusCodeSlots = static_cast<size_t>(StatusCode::kIOError) + 1;

/// What a server's sessions share: its options, listener, shared region and catalogue, and
/// running totals. Owned by the server; outlives every session.
struct ServerState {
  ServerOptions options;
  std::unique_ptr<transport::Listener> listener;
  std::shared_ptr<transport::Region> region;  // the shared region; NULL for packed bodies
  std::shared_ptr<RegionAllocator> allocator;
  std::shared_ptr<Allocator> region_memory;  // Server::region_allocator; NULL with no region
  // Set once region_memory is handed to a producer: until then no batch can lie in the region.
  std::atomic<bool> region_memory_taken{false};
  std::unique_ptr<Catalogue> catalogue;
  std::atomic<bool> stopping{false};
  /// Set by Server::Drain: requests from then on are refused with UNAVAILABLE.
  std::atomic<bool> draining{false};

  std::atomic<int64_t> next_session{0};  // sessions' ids: "<transport>-<n>"
  std::atomic<int64_t> clients_accepted{0}, clients_active{0}, batches_sent{0}, body_bytes{0},
      sessions_failed{0}, tickets_refused{0}, addresses_lent{0}, addresses_freed{0},
      addresses_reclaimed{0}, unknown_frees{0}, files_lent{0}, files_copied{0}, bodies_from_file{0},
      bodies_lent_in_place{0}, requests_reused{0};
  // The share of batches_sent and body_bytes that went as packed (type-0) bodies.
  std::atomic<int64_t> packed_batches{0}, packed_body_bytes{0};
  // Failed sessions by their error's code (StatusCode's value).
  std::array<std::atomic<int64_t>, kStatusCodeSlots> errors{};
  // clients_active falls under idle_mutex and idle_changed tells of it (Server::AwaitIdle).
  std::mutex idle_mutex;
  std::condition_variable idle_changed;
  mutable std::mutex error_mutex;
  std::string last_error;

  /// Count a failed session (by `code`) and keep its error; `record` (event and fields set,
  /// message the error) is logged as kWarning.
  void RecordError(LogRecord record, StatusCode code);
  /// Tell the options' log sink (or log lines), if any; the record's plane is the transport.
  void Log(LogRecord record) const;
  /// A kInfo record of `event` about the server as a whole.
  void Log(const char* event, const std::string& message) const;
};

/// One client's connection: it reads the want_data request, then serves the ticket's metadata,
/// bodies or both (as the request's tag says), and accounts for every address it lent until
/// the client frees it or goes. The server never closes first on a good stream: it waits (up to
/// the timeout) for the client's close, or, on a reusable connection whose stream lent nothing,
/// for the client's next request, served as the first was. Owned by the server's session list. The
/// stream writer it opens sends it messages through a private sink, so nothing else can.
class Session final {
 public:
  Session(ServerState* state, std::unique_ptr<transport::Connection> conn)
      : state_(state),
        conn_(std::move(conn)),
        id_(state->options.transport + "-" + std::to_string(++state->next_session)) {}
  ~Session();

  /// Start serving on a thread of its own.
  void Start();
  bool done() const { return done_.load(); }
  /// Close the connection and free everything this client held; `abort` does not wait for
  /// what is in flight (the server is stopping).
  void Kill(bool abort = false);
  /// Whether the client's request named `ticket` (from any thread).
  bool Redeemed(const std::string& ticket) const {
    std::lock_guard lock(ticket_mutex_);
    return ticket_ == ticket;
  }

 private:
  // The message sink the session's stream writer writes to: it hands each message to the
  // session, whose WriteMessage and WriteEndOfStream stay private.
  class MessageForwarder final : public ipc::MessageSink {
   public:
    explicit MessageForwarder(Session* session) : session_(session) {}
    Status WriteMessage(const ipc::EncodedMessage& m) override { return session_->WriteMessage(m); }
    Status WriteEndOfStream() override { return session_->WriteEndOfStream(); }

   private:
    Session* session_;
  };

  Status WriteMessage(const ipc::EncodedMessage& m);
  // The body of `m` as one range of the served file, when it is one (see session.cpp).
  std::optional<ByteSpan> BodyInFile(const ipc::EncodedMessage& m) const;
  // Lend `m`'s body where its producer wrote it, when every buffer lies in the shared region
  // and the batch is held (loan_); false (nothing sent) otherwise.
  Result<bool> LendInPlace(uint32_t seq, const ipc::EncodedMessage& m);
  Status WriteEndOfStream();
  void Serve();
  // Receive the connection's first request (after a paced client's window) and serve it.
  Status ServeRequest();
  // Serve one want_data request: look its ticket up and send the stream (or refuse it).
  Status ServeWant(const transport::TaggedMessage& want);
  // How the wait after a served stream ended (AwaitNextRequest).
  enum class After { kNotReusable, kNext, kClosed, kIdle };
  // After a stream that lent nothing, on a connection whose client may send another request
  // (Connection::reusable): wait up to the timeout for the client's kStreamDoneTag (or close),
  // then, no longer counted among the active clients, up to the timeout again for its next
  // request (into `*next`), its close, or the end of the server.
  After AwaitNextRequest(transport::TaggedMessage* next);
  // Count this session among the server's active clients, or not (Server::AwaitIdle).
  void SetActive(bool active);
  Status Replay(const Kept& kept);
  Status SendMetadata(ByteSpan flatbuffer, uint32_t seq);
  Status SendBody(uint32_t seq, BodyType type, std::span<const ByteSpan> body, ByteSpan flatbuffer);
  Status Refuse(const Status& why);
  void TakeFrees();
  // A paced client's credit message (ferry's extension): its count more batches may go. False
  // (the session failed, by name) for a malformed one.
  bool AddCredit(const transport::TaggedMessage& m);
  // With a paced client, wait (up to the timeout) for a credit and spend it; at once otherwise.
  Status AwaitCredit();
  void Release(const std::vector<uint64_t>& addresses);
  Status AwaitEnd();
  void FreeAll();
  void Failed(const std::string& why, StatusCode code);
  // Log session_end for the request just served.
  void LogEnd();
  // This session's trace: the client's hello's, else the ticket's (Trace).
  void FindTrace(const std::string& ticket);
  // A record of `event` with this session's id, peer, plane and trace.
  LogRecord Record(LogLevel level, const char* event, std::string message) const;
  void SendError(const Status& why);

  ServerState* state_;
  std::unique_ptr<transport::Connection> conn_;
  const std::string id_;  // for logs
  // The session's own span of the trace it serves, set anew for each request (under
  // ticket_mutex_: the free_data thread's records read it).
  TraceContext trace_;
  MessageForwarder sink_{this};  // what the stream writer writes to
  // What the client reads, held until it is done with it (its lent memory included): while
  // held, the catalogue counts the client as a reader.
  Catalogue::Entry entry_;
  // What the session was doing, for its errors: set by the serving thread, read by whichever of
  // the session's threads fails it first (the free_data thread too).
  std::atomic<const char*> phase_{"request"};
  // How the session ended where its status alone does not say (set on the serve thread).
  enum class End { kServed, kRefused, kGoneBeforeRequest };
  End end_ = End::kServed;
  bool send_metadata_ = true;
  bool send_bodies_ = true;
  // Whether this client gets packed bodies: the server's choice, or the connection's where
  // lending would make the client's reads slow copies through this process.
  bool packed_ = false;
  uint32_t next_seq_ = 0;
  // The ticket the request named (set once on the serve thread; Redeemed reads it).
  mutable std::mutex ticket_mutex_;
  std::string ticket_;
  std::atomic<bool> dead_{false};
  std::atomic<bool> done_{false};
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool client_closed_ = false;  // the client closed (or went): nothing more comes from it
  // A request that came on a reusable connection, taken by the free_data thread, waiting for
  // the serve thread once its stream has ended (under mutex_).
  std::optional<transport::TaggedMessage> next_want_;
  bool stream_done_ = false;  // the client said it read the stream and keeps the connection
  bool end_logged_ = false;   // session_end is logged for the last request (serve thread)
  bool active_ = false;       // counted in clients_active (serve thread)
  int64_t requests_ = 0;      // requests served on this connection (serve thread)
  // A paced client (one that sent credit before its request) gets a record batch only against a
  // credit; `credits_` (under mutex_) is what it has asked for and not yet been sent.
  bool paced_ = false;
  uint64_t credits_ = 0;
  std::atomic<bool> client_gone_{false};  // client_closed_, for waits that hold no mutex_
  bool unresponsive_ = false;             // the client neither freed nor closed in time
  // Shared-region blocks lent to this client, by the wire address of each block's first byte
  // (every address of a block is at or past it, and before the next block's): the block, and
  // its distinct addresses not yet freed. One entry per batch, however many buffers it has.
  struct LentBlock {
    int64_t block = 0;  // its offset in the region
    int64_t size = 0;   // the bytes asked of the allocator, given back with the block
    DistinctAddresses left;
  };
  std::map<uint64_t, LentBlock> blocks_;
  // The entry of blocks_ whose address was freed last, or the one after it once that one was
  // taken out, or end (under mutex_).
  std::map<uint64_t, LentBlock>::iterator free_hint_ = blocks_.end();
  // Nodes of blocks_ taken out as their blocks were freed, for the next blocks lent (up to
  // kSpareNodes): a client frees hundreds at once, and the batches after reuse their nodes.
  SpareNodes<std::map<uint64_t, LentBlock>> spare_blocks_{kSpareNodes};
  int64_t block_addresses_ = 0;  // addresses in blocks_ and loans_, not yet freed
  // Batches a producer wrote in the shared region, lent in place: each is held until the client
  // frees every address it was lent under.
  using Loan = LoanBook::Loan;
  LoanBook loans_;
  // The batch being written, taken from its reader because it lies in the shared region (on the
  // serving thread only; NULL otherwise).
  Loan loan_;
  // The memory of each Loan's hold, back with the loan's last address freed and reused by the
  // next batch lent in place, so a loan allocates nothing once the stream runs.
  std::shared_ptr<BlockPool> loan_blocks_ = std::make_shared<BlockPool>(kSpareNodes);
  // What Release drops after letting go of mutex_ (on the free_data thread only; kept for its
  // room).
  std::vector<Loan> returned_;
  LoanWindow lent_;  // kept datasets' addresses lent and not yet freed
  // What WriteMessage reuses batch after batch (on the serving thread only): a batch's pairs
  // and their encoding.
  std::vector<BufferRef> pairs_;
  std::vector<uint8_t> list_;
  std::thread serve_;
  std::thread frees_;
};

}  // namespace ferry::dipc::internal
