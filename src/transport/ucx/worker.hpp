// Internal to the UCX transport: one UCP context and worker with its own progress thread, the
// connections (peers) it carries, and the message pipeline from the wire to each peer's inbox.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ferry/transport/transport.hpp"

namespace ferry::transport::ucx {

/// UCX tags of the transport's own messages. Their reserved bits (32-55) are set and they differ
/// from kRegionTag, so no protocol tag equals them; SendTagged refuses them.
constexpr uint64_t kControlTagBase = 0x00E0000000000000ULL;
constexpr uint64_t kUntaggedTag = kControlTagBase | 1;  // the metadata channel
constexpr uint64_t kHelloTag = kControlTagBase | 2;     // server to client: its connection number
constexpr uint64_t kCloseTag = kControlTagBase | 3;     // "I closed; drain, then fail"
constexpr uint64_t kCloseAckTag = kControlTagBase | 4;  // "your close marker arrived"
constexpr uint64_t kAddressTag = kControlTagBase | 5;   // client to server: its worker address
constexpr uint64_t kReadyTag = kControlTagBase | 6;     // server to client: set up, go ahead

/// Whether `tag` is one of the transport's own tags (kRegionTag included).
constexpr bool IsTransportTag(uint64_t tag) {
  return tag == kRegionTag || (tag & 0xFFFFFFFF00000000ULL) == kControlTagBase;
}
/// One probe with this mask and kControlTagBase finds every transport tag (kRegionTag too), in
/// order; a protocol tag never matches it (its bits 32-55 are 0).
constexpr uint64_t kTransportTagMask = 0xFFE0000000000000ULL;
static_assert((kRegionTag & kTransportTagMask) == kControlTagBase);
/// A client holds at most this many bytes of bodies it has not asked for (read-ahead).
constexpr int64_t kInboxBytes = int64_t{64} << 20;
/// The largest receive Expect posts; larger bodies are probed for when asked.
constexpr int64_t kMaxExpected = int64_t{4} << 30;

class Worker;

/// A 64-byte-aligned buffer of at least `size` bytes, recycled process-wide when 1 MiB or more
/// (a fresh large allocation costs an mmap and a page fault per 4 KiB). Null when out of memory.
std::shared_ptr<uint8_t> TakeBuffer(size_t size);

/// A region the peer shared: its address range and packed rkey, unpacked on first use.
struct RemoteRegion {
  uint64_t base = 0;
  uint64_t size = 0;
  std::string packed_rkey;
  ucp_rkey_h rkey = nullptr;  // touched only on the progress thread
};

/// One connection as the worker sees it: its endpoint, its inbox and its close state. Shared by
/// the Connection object and the worker (the endpoint's error handler points at it).
struct Peer {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<SharedBytes> untagged;
  std::deque<TaggedMessage> tagged;
  std::vector<std::shared_ptr<RemoteRegion>> regions;
  bool hello = false;        // client: the server accepted and named this connection
  bool ready = false;        // client: the server set up its side (the fast endpoint, if any)
  std::string peer_address;  // client: the server's worker address, from its hello

  /// A client's receive waiting for a tagged message: the progress thread looks for it in
  /// UCX's queue by tag and mask, past messages the read-ahead limit leaves there.
  struct Want {
    int64_t id = 0;
    uint64_t tag = 0;
    uint64_t mask = 0;
    bool in_flight = false;  // a match is landing
    bool exhausted = false;  // the peer closed and nothing matches
  };
  bool on_demand = false;  // client: tagged messages come in only as wanted or read ahead
  std::vector<Want> wants;
  int64_t next_want = 0;
  int64_t held_bytes = 0;    // tagged bytes landing or in `tagged`, not yet received
  bool peer_closed = false;  // the peer's close marker arrived, or its endpoint failed
  bool failed = false;       // the endpoint failed (the peer died or disconnected)
  bool close_acked = false;  // the peer saw this end's close marker
  bool closed = false;       // this end closed
  std::string failure;       // why the endpoint failed

  // Progress thread only.
  ucp_ep_h ep = nullptr;       // made through the listener's socket address: error mode PEER
  ucp_ep_h fast_ep = nullptr;  // made from the peer's worker address (same host only)
  uint64_t id = 0;             // the server's number for this connection, carried in every message
  Worker* worker = nullptr;    // the worker carrying it (for the error handler)

  /// The endpoint messages go on: the fast one once it exists. UCX 1.13 gives endpoints made
  /// through a socket address, or with peer-failure handling, TCP lanes only; one made from the
  /// peer's worker address without it gets shared memory and CMA. The socket-address endpoint
  /// stays open beside it, so a dead peer is still noticed (and cancels the fast one).
  ucp_ep_h data_ep() const { return fast_ep != nullptr ? fast_ep : ep; }
};

/// Waits for one or more UCX operations started on the progress thread.
class Completion {
 public:
  explicit Completion(int count = 1) : remaining_(count) {}
  /// Record one finished operation (progress thread).
  void Done(ucs_status_t status);
  /// Wait until every operation finished or `deadline` passed; false on timeout.
  bool Wait(std::chrono::steady_clock::time_point deadline);
  /// Wait with no deadline (the endpoint's error handling bounds it).
  void Wait();
  ucs_status_t status();

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  int remaining_;
  ucs_status_t status_ = UCS_OK;
};

/// A UCP context and one worker, progressed by a thread that sleeps in epoll on the worker's
/// event descriptor (ucp_worker_arm) and an eventfd for its task queue, so an idle worker uses
/// no CPU. Every endpoint operation runs on that thread; other threads post tasks and wait.
class Worker {
 public:
  /// Initialise UCX (TAG, RMA and WAKEUP features, a multi-threaded worker) and start progress.
  static Result<std::shared_ptr<Worker>> Create();
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_context_h context() const { return context_; }

  /// Run `task` on the progress thread (soon, in posting order).
  void Post(std::function<void()> task);
  /// Make the progress thread look again (a receive started waiting, or inbox space freed).
  void Wake();

  /// Listen on `addr`; accepted connections queue for Accept. Returns the bound port.
  Result<int> Listen(const sockaddr* addr, socklen_t addrlen);
  /// The next accepted peer, or ETIMEDOUT / ECANCELED.
  Result<std::shared_ptr<Peer>> Accept(std::chrono::milliseconds timeout);
  /// Stop listening; Accept calls return ECANCELED.
  void StopListening();

  /// Connect to a listener and wait until it is ready (this worker then carries only that
  /// peer). With `same_host`, both ends also make the fast endpoint (shared memory, CMA).
  Result<std::shared_ptr<Peer>> Connect(const sockaddr* addr, socklen_t addrlen,
                                        const std::string& address, bool same_host,
                                        std::chrono::milliseconds timeout);

  /// Send one tag message of `pieces` (plus the connection number) and wait for completion.
  [[nodiscard]] Status Send(const std::shared_ptr<Peer>& peer, uint64_t tag,
                            std::span<const ByteSpan> pieces);
  /// Get `refs[i]` from `regions[i]` into `dest + offsets[i]`, waiting until `deadline`.
  [[nodiscard]] Status Get(const std::shared_ptr<Peer>& peer,
                           const std::vector<std::shared_ptr<RemoteRegion>>& regions,
                           std::span<const BufferRef> refs, const std::vector<uint64_t>& offsets,
                           const std::shared_ptr<uint8_t>& dest,
                           std::chrono::steady_clock::time_point deadline);
  /// Client: post a receive for the message tagged exactly `tag`, of at most `size` bytes plus
  /// the trailer, unless it is already here or landing (at most kMaxExpected bytes).
  void Expect(const std::shared_ptr<Peer>& peer, uint64_t tag, int64_t size);
  /// Client: cancel posted receives whose tag matches `want` under `mask` (a message for that
  /// sequence number came by another tag, or another way).
  void DropPosted(uint64_t want, uint64_t mask);
  /// Close `peer`: send the close marker, wait (bounded) for its acknowledgement, then close
  /// the endpoint (forced) and forget the peer.
  void Close(const std::shared_ptr<Peer>& peer);

 private:
  struct Incoming;
  Worker() = default;
  Status Init();
  void Loop();
  void PollMessages();
  void Deliver(Incoming& in);
  void PollClient(Peer& peer);
  void Take(ucp_tag_message_h message, const ucp_tag_recv_info_t& info, int64_t want);
  void HandleFailures();
  void SettlePosted();
  void AcceptPending();
  void SendControl(Peer& peer, uint64_t tag, uint64_t value);
  void SendBytes(Peer& peer, ucp_ep_h ep, uint64_t tag, std::string payload);
  void OnAddress(const std::shared_ptr<Peer>& peer, const SharedBytes& address);
  void OnHello(Peer& peer, const SharedBytes& payload);
  void ForceClose(ucp_ep_h ep);
  void CloseEndpoint(const std::shared_ptr<Peer>& peer, const std::shared_ptr<Completion>& done);
  ucp_ep_params_t EndpointParams(Peer* peer) const;
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  /// A receive into an Incoming (its user data) finished.
  static void OnReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                         void* user_data);
  static void OnConnectionRequest(ucp_conn_request_h request, void* arg);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;  // this worker's packed address
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  std::mutex tasks_mutex_;
  std::vector<std::function<void()>> tasks_;

  // Progress thread only.
  ucp_listener_h listener_ = nullptr;
  std::vector<ucp_conn_request_h> requests_;
  std::deque<std::unique_ptr<Incoming>> incoming_;
  std::vector<std::unique_ptr<Incoming>> posted_;  // receives posted by Expect
  std::map<uint64_t, std::shared_ptr<Peer>> peers_;
  std::shared_ptr<Peer> only_peer_;  // a client worker's one connection
  std::vector<Peer*> failed_;        // endpoint errors to act on after progress
  uint64_t next_id_ = 1;

  std::mutex accept_mutex_;
  std::condition_variable accept_changed_;
  std::deque<std::shared_ptr<Peer>> accepted_;
  bool listening_ = false;
};

}  // namespace ferry::transport::ucx
