// Internal to the UCX transport: what both ends of a UCX connection share. The wire is the
// Dissociated IPC protocol's own mapping onto UCP: untagged messages are Active Messages (id 0,
// no header), tagged messages are UCP tag messages, and nothing else travels unless the client
// asked for ferry's extensions (ConnectOptions::extensions, from the URI's ferry=1).
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "ferry/transport/transport.hpp"
#include "transport/adaptive_spin.hpp"
#include "transport/mailbox.hpp"
#include "transport/ucx/endpoint.hpp"
#include "transport/ucx/pair.hpp"
#include "transport/ucx/worker.hpp"

namespace ferry::transport::internal::ucx {

/// The Active Message id that carries untagged (metadata) messages.
constexpr unsigned kMetadataAmId = 0;

/// A tagged message of several pieces this large or larger is gathered into one buffer before
/// it goes on TCP lanes (the rendezvous threshold ferry sets: smaller ones go eager, packed by
/// UCX anyway).
constexpr size_t kGatherMinBytes = size_t{256} << 10;
/// Messages up to this size are sent from a copy the send owns (a copy costs less than tracking
/// the caller's bytes through an endpoint's wire-up).
constexpr size_t kCopyMaxBytes = size_t{16} << 10;
/// How long a sender whose send did not complete at once keeps it before it leaves the send to
/// the progress thread (Await). Each look at its completion naps for kLookNap
/// (Completion::Wait), so the sender looks, progresses the worker once, and looks again, while
/// its peer has the core to answer; a rendezvous pays this once.
constexpr std::chrono::microseconds kSendSpin{50};
/// A send this large or larger skips that spin and goes to the progress thread at once: it
/// takes longer than the spin on any lane (a MiB is over 100 us at 10 GB/s), so each nap was a
/// wasted context switch. Skipping them cut a server's switches for 8 MiB batches over TCP from
/// about 5 a batch to 2, and the parallel read of two servers (bench/cluster) ran at 1.05x.
constexpr size_t kSendSpinMaxBytes = size_t{1} << 20;

/// ferry's extension, only between ferry peers and only when the client asks: the client's
/// hello (flags, then its worker address when it wants the fast path) and the server's answer
/// (the flags it grants, then its connection worker's address). Reserved bits 32-55 are set, so
/// it is never a protocol tag; SendTagged refuses it.
constexpr uint64_t kHelloTag = 0x00FE000000000001ULL;
/// Hello flags: the peer may send error texts (metadata type 0xFF); it wants (client) or
/// grants (server) an endpoint from worker addresses, which UCX gives shared memory and CMA; the
/// client reads only some buffers of each body, so it wants buffer lists even where the server
/// would rather send packed bodies (client only); the hello carries a trace (client only:
/// ConnectOptions::trace).
constexpr uint8_t kHelloErrors = 1;
constexpr uint8_t kHelloFastPath = 2;
constexpr uint8_t kHelloBufferLists = 4;
constexpr uint8_t kHelloTrace = 8;
/// Hello flag: the client takes a metadata message and its body as one tagged message (a pair,
/// kPairTagBit); the server grants it and then sends each small body so, and every other
/// metadata message tagged kLoneMetadataTag. One message a batch instead of two: half the
/// sends, receives and wake-ups.
constexpr uint8_t kHelloPairs = 16;
/// Hello flag: the client may send another request once a stream has ended on this connection
/// (Connection::reusable); the server grants it when it serves more than one request a
/// connection. A client then keeps the connection for its next stream to the same server.
constexpr uint8_t kHelloReuse = 32;
/// Hello bytes: version (1), flags, the trace's length (uint16, little-endian; 0 without
/// kHelloTrace), four zero bytes, then the trace's bytes, then a worker address (possibly
/// empty).
constexpr size_t kHelloHeader = 8;
/// A hello of `flags` (kHelloTrace added when `trace` is not empty).
std::string EncodeHello(uint8_t flags, const std::string& address, const std::string& trace = {});
/// Flags, address and trace of a hello; false when it is not one (wrong size or version, a
/// trace longer than the hello).
bool DecodeHello(const SharedBytes& bytes, uint8_t* flags, std::string* address,
                 std::string* trace = nullptr);

/// One end of a UCX connection: its own worker (so a server tells its clients apart by the
/// worker their messages reach), a peer-checked endpoint made through the listener's socket
/// address, and, with the fast path, an unchecked endpoint from worker addresses that carries
/// the traffic while the checked one watches the peer. Received messages wait in a Mailbox.
/// Thread-safe. Owns its worker and endpoints; Close (or the destructor) tears them down.
class UcxConnection : public Connection {
 public:
  /// Where a receive's bytes (or its failure) go, on the progress thread.
  using Landed = std::function<void(ucs_status_t status, SharedBytes bytes)>;

  ~UcxConnection() override;

  Status Send(std::span<const ByteSpan> pieces) override;
  Status SendTagged(uint64_t tag, std::span<const ByteSpan> pieces) override;
  /// One tagged message (a pair, kPairTagBit) where the peer takes pairs and the body is at
  /// most kPairMaxBodyBytes; otherwise the metadata, then the body, as two messages.
  Status SendMessageAndBody(std::span<const ByteSpan> metadata, uint64_t tag,
                            std::span<const ByteSpan> body) override;
  Result<SharedBytes> Receive(std::chrono::milliseconds timeout) override;
  Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                      std::chrono::milliseconds timeout) override;
  Status Flush() override;
  void Close() override;
  void Abort() override;
  bool extensions() const override { return extensions_.load(); }
  std::string peer() const override { return peer_; }
  /// Regions travel in the URI (remote_handle), never in-band: sharing one only keeps it alive
  /// while this connection may be read from.
  Status ShareRegion(const std::shared_ptr<Region>& region) override;

 protected:
  UcxConnection(std::unique_ptr<Worker> worker, TransportLimits limits, bool takes_metadata);

  /// Register the Active Message handler and start the worker's thread (derived constructors
  /// call it last).
  Status StartWorker();
  /// The endpoint traffic goes on: the fast one once it exists. Call it with the worker's lock
  /// held (on the progress thread, or under Worker::Lock).
  ucp_ep_h traffic_ep() const { return fast_ep_ != nullptr ? fast_ep_ : ep_; }
  /// Tagged intake, on the progress thread after each round of progress (and on a caller's
  /// thread in Pump), with the worker's lock held. An intake that left work it could do now
  /// (a read-ahead cut short) sets poll_again_, so that the progress thread comes back at once
  /// instead of sleeping until the next event, or, cut short for a thread waiting for the lock,
  /// calls Worker::WakeOnRelease, so that it comes back once that thread lets the lock go.
  virtual void Poll() = 0;
  /// Receive the probed `message` of `info.length` bytes; `on_done` gets the bytes or the
  /// failure (progress thread; `on_done` runs there too). A message over the tagged limit is
  /// taken off the wire truncated, without allocating its size, and fails.
  void Take(ucp_tag_message_h message, const ucp_tag_recv_info_t& info, Landed on_done);
  /// The connection cannot go on (progress thread or any): record why, once, and let Poll
  /// settle what is landing before the inbox closes. `abort` force-closes the endpoints too.
  void Fail(const std::string& why, bool abort);
  /// Whether a metadata message of `length` bytes is over the limit; if it is, the connection
  /// fails (the peer broke the protocol) with a message naming both sizes.
  bool OverMetadataLimit(uint64_t length);
  /// Close the inbox once the peer is gone and nothing is landing, or a little after (progress
  /// thread). Returns how soon to look again (negative: on the next event).
  std::chrono::milliseconds SettleFailure();
  /// Why sends fail now, or OK.
  Status SendStatus(const char* doing);
  /// Register an operation a caller waits for: a failure of the connection ends the wait at
  /// once (after the endpoints are force-closed, so nothing of the caller's is read any more).
  void Waiting(const std::shared_ptr<Completion>& done);
  /// Whether traffic goes on the same-host fast endpoint (shared memory and CMA).
  bool OnFastLanes();
  /// Send on the traffic endpoint and wait; a peer that takes nothing for the timeout fails the
  /// connection. A tagged message of several pieces and at least kGatherMinBytes bound for TCP
  /// lanes is first copied into one recycled buffer (UCX's TCP lanes move a vector slowly), and
  /// that send is not waited for: the next such send, or Close, waits for it (and reports its
  /// failure), so the copy of one overlaps the sending of the one before.
  /// `keep`, if any, is kept alive until the send completes (bytes that `pieces` point into).
  Status Transmit(bool active_message, uint64_t tag, std::span<const ByteSpan> pieces,
                  std::shared_ptr<const void> keep = nullptr);
  /// Wait for `done`, a send in flight, up to the timeout by the clock; a peer that takes nothing
  /// for that long fails the connection. `spin`: look and progress for kSendSpin first (a send
  /// under kSendSpinMaxBytes); otherwise leave the send to the progress thread at once.
  Status Await(const std::shared_ptr<Completion>& done, bool spin = true);
  /// Wait for the gathered send still in flight, if any (Await).
  Status AwaitStaged();
  /// Post a tagged receive for exactly `tag`, of at most `size` bytes, landing in a buffer of
  /// ours (progress thread). Returns its request, or NULL when it settled at once.
  void* PostReceive(uint64_t tag, size_t size, Landed on_done);
  /// Release what was made for the peer's endpoints (rkeys) before they close (progress thread,
  /// or the tearing-down thread).
  virtual void ReleaseRemote() {}
  /// Progress the worker on the calling thread, a bounded few rounds, then poll: what has
  /// arrived lands in the inbox now, without a trip through the progress thread. Receives call
  /// it before they block. Safe from any thread (the worker is multi-threaded).
  void Pump();
  /// `pop(wait)` (the inbox's) for a receive: a look first; then, within the spin
  /// (TransportLimits::spin, stretched across a steady stream's gaps: AdaptiveSpin), Pump and
  /// look again; then the pop's own wait.
  template <typename Pop>
  auto PumpWhileWaiting(std::chrono::milliseconds timeout, Pop pop) -> decltype(pop(timeout));
  /// Tear down on the calling thread once the worker's thread has stopped.
  virtual void TearDown();

  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);

  std::unique_ptr<Worker> worker_;
  // Its clock set (WithClock): receives and the timeouts of sends, connects and gets run on it.
  const TransportLimits limits_;
  std::string peer_;  // set once, before the connection is handed out
  internal::Mailbox inbox_;
  // Set once its endpoint has a shared-memory lane (DrainAfterTake). Over TCP alone the same
  // progress reads the socket ahead of the caller, a system call each, which made streams slower.
  std::atomic<bool> drains_on_take_{false};
  // A receive took a message of `bytes` without waiting. With drains_on_take_ (and a spin),
  // progress the worker once the messages taken so since the last time would fill
  // kDrainFragments of UCX's queue: it holds what the sender sent (a slot of its 64 per fragment
  // of up to kQueueFragmentBytes) until this worker progresses, and a sender that finds it full
  // waits for its progress thread's wake-up. Progressing after every message cost each a TCP
  // lane's epoll_wait.
  void DrainAfterTake(int64_t bytes);
  static constexpr int64_t kQueueFragmentBytes = 8192;
  static constexpr int64_t kDrainFragments = 12;
  std::atomic<int64_t> taken_fragments_{0};
  std::mutex spin_mutex_;
  internal::AdaptiveSpin spin_;  // how long a receive pumps before it sleeps (spin_mutex_)
  std::atomic<bool> extensions_{false};
  std::atomic<bool> sends_pairs_{false};  // server: the client takes pairs (its hello asked)
  std::atomic<int> landing_{0};  // receives in flight (tagged and rendezvous Active Messages)

  // The endpoints, used under the worker's lock: on the progress thread, or by any thread that
  // took Worker::Lock (a send then costs no trip through the progress thread).
  ucp_ep_h ep_ = nullptr;       // checked, through the listener's socket address
  ucp_ep_h fast_ep_ = nullptr;  // unchecked, from worker addresses (same host, extension)

  // Held shared while a receiver pumps the worker; TearDown takes it exclusively first.
  std::shared_mutex pump_mutex_;
  bool pumpable_ = true;  // guarded by pump_mutex_

  mutable std::mutex mutex_;
  bool closed_ = false;        // this end closed
  bool gone_ = false;          // the peer closed or died, or the stream broke
  bool inbox_closed_ = false;  // progress thread: the inbox was closed after `gone_`
  std::chrono::steady_clock::time_point gone_at_{};
  std::string failure_;                             // why `gone_`
  std::vector<std::weak_ptr<Completion>> waiting_;  // operations callers wait for
  std::vector<std::shared_ptr<Region>> shared_;

  std::mutex staged_mutex_;
  std::shared_ptr<Completion> staged_;  // the gathered send not yet waited for (Transmit)

  /// Force-close an endpoint (under the worker's lock), its completion kept in closing_ so that
  /// TearDown progresses the worker until the close is done (a forced close needs nothing from
  /// the peer): UCX 1.13 asserts when a worker is destroyed while an endpoint still holds a
  /// wire-up flush (ucp_ep.c, "should have been flushed"), as one whose fast path failed to wire
  /// up does.
  void CloseTracked(ucp_ep_h ep);
  std::vector<std::shared_ptr<Completion>> closing_;  // under the worker's lock
  bool poll_again_ = false;                           // under the worker's lock (Poll)

 private:
  static ucs_status_t OnActiveMessage(void* arg, const void* header, size_t header_length,
                                      void* data, size_t length, const ucp_am_recv_param_t* param);
  ucs_status_t ActiveMessage(size_t header_length, void* data, size_t length,
                             const ucp_am_recv_param_t* param);
  void Shut(bool force);
  void ReleaseWaiters();
  void CloseEndpoints(bool force);

  const bool takes_metadata_;
  std::once_flag torn_down_;
};

}  // namespace ferry::transport::internal::ucx
