// The transport interface: untagged messages in order, tagged messages matched by tag and mask,
// memory regions a peer may read, and connection errors. Every transport (in-process, shared
// memory, UCX) implements it, and one conformance suite tests them all. A transport moves bytes;
// it never sees Arrow types.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/bytes.hpp"
#include "ferry/core/clock.hpp"
#include "ferry/core/result.hpp"
#include "ferry/transport/region.hpp"

namespace ferry::transport {

/// A received tagged message: the sender's full tag and the payload, owned by the receiver.
struct FERRY_EXPORT TaggedMessage {
  uint64_t tag = 0;
  SharedBytes payload;
};

/// An untagged message and, when it had come already, the tagged message asked for with it
/// (Connection::ReceiveMessageAndBody).
struct FERRY_EXPORT MessageAndBody {
  SharedBytes message;
  std::optional<TaggedMessage> body;
};

/// Tag of the shared-memory transport's own control message (a region's descriptor). Its
/// reserved bits are set, so it never matches a body, want_data or free_data tag.
constexpr uint64_t kRegionTag = 0x00F0000000000000ULL;

/// Limits and timing of one transport end: what a peer cannot make it wait for or allocate.
/// Plain values, and the clock they are timed by.
struct FERRY_EXPORT TransportLimits {
  /// How long a send may wait for the peer to take it, and a connect for the peer to answer. A
  /// stopped peer, or a link that went down, fails the connection after this long.
  std::chrono::milliseconds timeout{30000};
  /// What times this end's waits: the timeout above, a connect's retries, and the timeouts given
  /// to Receive, ReceiveTagged, Fetch and Accept. NULL: Clock::Real(). Tests pass a ManualClock
  /// and move it instead of waiting. (The few graces in which ferry waits for UCX to let go of
  /// something at a close or a failure stay on the steady clock.)
  std::shared_ptr<Clock> clock;
  /// The largest untagged (metadata) message taken from the peer; a larger one fails the
  /// connection with an error naming both sizes.
  int64_t max_message_bytes = int64_t{64} << 20;
  /// The largest tagged message (a body) taken from the peer.
  int64_t max_tagged_bytes = int64_t{4} << 30;
  /// Whether peers may read this end's memory (regions, type-1 bodies). Off, UCX's remote memory
  /// access is not even enabled, so no peer can reach this process's memory through it.
  bool remote_memory = true;
  /// How long a receive that finds nothing watches for its message on the CPU before it sleeps
  /// (0: it sleeps at once). A sleeping receiver is woken by the kernel, which on a VM whose idle
  /// cores halt can take tens of µs; a spinning one sees the message at once, for a core's time
  /// while it spins. Spent once per receive, so an idle end stays idle. Where the last 8
  /// messages each came within 4 spins of the one before, a receive spins on (up to 4 spins)
  /// until a spin past when the next is due (shm:// and ucx://).
  std::chrono::microseconds spin{0};
  /// Where a listener tells of a connection request it could not take, one line naming the peer
  /// and the cause, from the listener's own thread; the peer is refused at once rather than left
  /// waiting out its timeout. Unset: nowhere.
  std::function<void(const std::string&)> refused;
};

/// How a client connects. Plain values.
struct FERRY_EXPORT ConnectOptions {
  TransportLimits limits;
  /// The URI's remote_handle, decoded (UCX: the packed rkey that type-1 fetches read with).
  std::string remote_handle;
  /// The URI says the server speaks ferry's extensions (ferry=1): error texts and, on one host,
  /// UCX's shared-memory fast path. Without it nothing travels that the protocol does not define.
  bool extensions = false;
  /// With extensions, ask the server to lend buffer lists even where it would rather send bodies
  /// packed (Connection::prefers_packed_bodies): the client reads only some buffers of each body,
  /// or was told to (dipc::ClientOptions::buffer_lists).
  bool buffer_lists = false;
  /// How long connecting may take; 0: limits.timeout. Over shared memory the client keeps trying
  /// while nothing listens (a server still starting); over UCX it waits this long for the
  /// endpoint to wire up, and a refusal fails at once. A caller that knows the server is up (it
  /// just named the address) sets it short, so an unreachable address fails fast.
  std::chrono::milliseconds connect_timeout{0};
  /// With extensions, bytes the server's end is told before anything else (ferry's hello: a
  /// field of the UCX hello, a trace frame over shared memory), which it reads with
  /// Connection::trace(). The Dissociated IPC layer puts a W3C traceparent here. At most
  /// kMaxTraceBytes; empty: none, and nothing extra travels.
  std::string trace;
};

/// The most bytes ConnectOptions::trace may hold.
constexpr size_t kMaxTraceBytes = 1024;

/// A fetch started by Connection::StartFetch whose buffers land while the caller does other
/// work. Owned by the caller, and destroyed before its connection; dropping it unwaited abandons
/// the fetch (the transport keeps the memory being written until it is done with it).
class FERRY_EXPORT FetchInFlight {
 public:
  virtual ~FetchInFlight() = default;
  /// Wait up to `timeout` for every buffer: the body, or the error Fetch would have returned.
  /// Call it once.
  virtual Result<FetchedBody> Wait(std::chrono::milliseconds timeout) = 0;
};

/// One end of a connection. Sends gather `pieces` into one message (a transport may send them
/// without copying); receives block up to `timeout` and fail with ETIMEDOUT, or with EPIPE once
/// the peer has closed and nothing matching is left. Thread-safe: any thread may send or
/// receive.
class FERRY_EXPORT Connection {
 public:
  virtual ~Connection() = default;
  [[nodiscard]] virtual Status Send(std::span<const ByteSpan> pieces) = 0;
  [[nodiscard]] virtual Status SendTagged(uint64_t tag, std::span<const ByteSpan> pieces) = 0;
  /// Send a metadata message and its body's tagged message together: transports may do it in
  /// one operation (shared memory: one sendmsg). By default, Send then SendTagged.
  [[nodiscard]] virtual Status SendMessageAndBody(std::span<const ByteSpan> metadata, uint64_t tag,
                                                  std::span<const ByteSpan> body);
  virtual Result<SharedBytes> Receive(std::chrono::milliseconds timeout) = 0;
  /// A hint: a tagged message with exactly `tag`, of at most `size` bytes, is expected. A
  /// transport may post a receive for it now, into memory of its own (UCX does, so a body is
  /// taken the moment it arrives); a larger message then fails the connection with an error
  /// naming both sizes. By default nothing.
  virtual void Expect(uint64_t tag, int64_t size);
  /// Whether Expect does anything here (callers may skip working out the size otherwise).
  virtual bool posts_receives() const { return false; }
  /// The oldest tagged message whose tag satisfies `(tag & mask) == (want & mask)`.
  virtual Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                              std::chrono::milliseconds timeout) = 0;
  /// Receive(timeout), and with it the oldest tagged message that ReceiveTagged(want, mask)
  /// would give if it has come already (a look: it never waits for it): the receiving end of
  /// SendMessageAndBody. A transport may do both in one step (shared memory: the look skips the
  /// read that a receive of its own would lead). By default, Receive and then a ReceiveTagged
  /// with no wait, whose failure leaves `body` empty.
  virtual Result<MessageAndBody> ReceiveMessageAndBody(uint64_t want, uint64_t mask,
                                                       std::chrono::milliseconds timeout);
  /// Wait, up to the connection's timeout, for every send that returned before it finished (the
  /// UCX transport returns from a gathered body's send early), and return the failure of one
  /// that did not finish. OK at once where every send finishes before it returns (the default).
  [[nodiscard]] virtual Status Flush() { return Status::OK(); }
  /// Close this end; the peer's receives drain what was sent, then fail with EPIPE.
  virtual void Close() = 0;
  /// Close this end at once, without waiting for what is in flight to reach the peer (a server
  /// stopping, a peer that misbehaved). By default, Close.
  virtual void Abort() { Close(); }
  /// Whether both ends agreed to ferry's extensions (error texts, fast paths). A connection
  /// from or to an implementation of the bare protocol says false.
  virtual bool extensions() const { return false; }
  /// Who is at the other end, for messages: "host:port" (UCX), "pid N" (shared memory), or "".
  virtual std::string peer() const { return {}; }
  /// Server side: the trace bytes the client sent with ferry's hello (ConnectOptions::trace),
  /// or empty. Known before the first message from the client is received.
  virtual std::string trace() const { return {}; }
  /// Server side: whether this peer should get packed bodies where the server would lend
  /// memory (type 1), because its reads of lent memory would not be one-sided but emulated by
  /// messages this process copies (UCX before 1.16 on one host: a 512 KiB shared-memory queue
  /// that several clients turn into a spinning sender; over TCP lanes in any UCX: each get's
  /// bytes copied into messages). A packed body moves the same bytes by rendezvous there, which
  /// the peer reads with CMA or receives in place. False by default.
  virtual bool prefers_packed_bodies() const { return false; }
  /// Whether both ends agreed (ferry's hello) that the client may send another request once a
  /// stream has ended on this connection, so that a client keeps it for its next stream to the
  /// same server rather than connecting again (UCX: 10-80 ms a connection). False by default.
  virtual bool reusable() const { return false; }

  /// Server side: make `region` readable by the peer (shared memory passes its descriptor; UCX
  /// sends the packed rkey), before the first pair that points into it. ENOTSUP by default.
  [[nodiscard]] virtual Status ShareRegion(const std::shared_ptr<Region>& region);
  /// Client side: bring the buffers `refs` (wire addresses into regions the peer shared) here,
  /// into `*out`, whose buffers vector keeps its room from one call to the next. A ref outside
  /// every shared region is an error naming it. Shared memory maps them in place; UCX gets them
  /// into one local allocation. ENOTSUP by default.
  [[nodiscard]] virtual Status Fetch(std::span<const BufferRef> refs,
                                     std::chrono::milliseconds timeout, FetchedBody* out);
  /// Client side: start Fetch and return while its buffers travel (UCX posts the gets and
  /// returns), so a caller can validate one batch while the next one lands. Errors found before
  /// anything is posted (a ref overflowing, no remote_handle) are returned here. By default the
  /// whole Fetch runs now, and Wait hands back its result.
  virtual Result<std::unique_ptr<FetchInFlight>> StartFetch(std::span<const BufferRef> refs,
                                                            std::chrono::milliseconds timeout);
  /// Whether StartFetch returns before the buffers are here (worth starting one early).
  virtual bool fetches_in_background() const { return false; }
};

/// A listening endpoint of one transport. Thread-safe.
class FERRY_EXPORT Listener {
 public:
  virtual ~Listener() = default;
  /// The next client, waiting up to `timeout` (ETIMEDOUT), or ECANCELED once closed.
  virtual Result<std::unique_ptr<Connection>> Accept(std::chrono::milliseconds timeout) = 0;
  /// The URI scheme ("shm", "ucx") and the authority clients connect to (a socket path, or
  /// host:port).
  virtual std::string scheme() const = 0;
  virtual std::string address() const = 0;
  /// Memory for type-1 bodies, `size` bytes, to be shared on connections. ENOTSUP where the
  /// transport has none.
  virtual Result<std::shared_ptr<Region>> CreateRegion(int64_t size);
  /// Memory the caller already has made a region that peers may read, without copying it: a
  /// served file's pages go to clients as they are. The region is read-only (its data() must
  /// not be written). ENOTSUP by default.
  virtual Result<std::shared_ptr<Region>> RegisterRegion(LendableBytes memory);
  /// Stop accepting; blocked Accept calls return ECANCELED.
  virtual void Close() = 0;
};

/// Listen with the transport a URI scheme names ("shm" or "ucx") at `address` (a socket path or
/// host:port; empty picks a fresh one). Accepted connections hold to `limits`. Errors name an
/// unknown scheme, or one this build lacks.
FERRY_EXPORT Result<std::unique_ptr<Listener>> Listen(const std::string& scheme,
                                                      const std::string& address,
                                                      TransportLimits limits = {});
/// Connect to a listener, waiting up to `options.limits.timeout` by `options.limits.clock`.
FERRY_EXPORT Result<std::unique_ptr<Connection>> Connect(const std::string& scheme,
                                                         const std::string& address,
                                                         const ConnectOptions& options);

}  // namespace ferry::transport
