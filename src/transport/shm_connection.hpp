// Internal to the shared-memory transport: one end of a connection. Frames over a Unix stream
// socket, or from the server through the client's frame ring (shm_ring.hpp); memfd segments (and
// served files) passed with SCM_RIGHTS and mapped read-only by the client, so type-1 bodies are
// read in place. Sending is shm_connection.cpp's; reading, shm_reading.cpp's (who reads) and
// shm_frame_reading.cpp's (the frames).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ferry/transport/transport.hpp"
#include "transport/adaptive_spin.hpp"
#include "transport/frame_memory.hpp"
#include "transport/mailbox.hpp"
#include "transport/shm_frames.hpp"
#include "transport/shm_ring.hpp"
#include "transport/shm_segments.hpp"

namespace ferry::transport::internal::shm {

/// One end over `fd`, a connected Unix stream socket it owns. A reader thread reads the socket
/// (or the ring) when no receiving caller does; any thread may send or receive.
class ShmConnection final : public Connection {
 public:
  /// `ring`: a client's frame ring, offered to the server by OfferRing.
  ShmConnection(int fd, TransportLimits limits, std::optional<FrameRing> ring = std::nullopt);
  ~ShmConnection() override;

  Status Send(std::span<const ByteSpan> pieces) override;
  Status SendTagged(uint64_t tag, std::span<const ByteSpan> pieces) override;
  Status SendMessageAndBody(std::span<const ByteSpan> metadata, uint64_t tag,
                            std::span<const ByteSpan> body) override;
  Result<SharedBytes> Receive(std::chrono::milliseconds timeout) override;
  Result<MessageAndBody> ReceiveMessageAndBody(uint64_t want, uint64_t mask,
                                               std::chrono::milliseconds timeout) override;
  Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                      std::chrono::milliseconds timeout) override;
  void Close() override;
  Status ShareRegion(const std::shared_ptr<Region>& region) override;
  Status Fetch(std::span<const BufferRef> refs, std::chrono::milliseconds /*timeout*/,
               FetchedBody* out) override {
    return segments_.Fetch(refs, out);
  }

  /// The shared-memory scheme is ferry's own: both ends always speak its extensions.
  bool extensions() const override { return true; }
  std::string peer() const override { return peer_; }
  std::string trace() const override {
    std::lock_guard lock(trace_mutex_);
    return trace_;
  }
  /// Client side: offer the ring made for the constructor, as `fd` (closed here).
  Status OfferRing(int fd);
  /// Client side: send the trace frame (before anything else).
  Status SendTrace(const std::string& trace);

 private:
  // Sending (shm_connection.cpp).

  Status SendFrame(FrameKind kind, uint64_t tag, std::span<const ByteSpan> pieces, int pass_fd,
                   uint64_t length = 0);
  // Frames sent together are never interleaved with another thread's. A peer that took nothing
  // for the timeout fails the connection.
  Status SendIov(std::vector<iovec>& iov, int pass_fd);
  // With send_mutex_, once the client's ring is taken: the frames go into the ring, a descriptor
  // first over the socket with a byte, and a sleeping client is woken with a byte.
  Status SendToRing(std::span<const iovec> iov, int pass_fd);
  // Wake the client with a byte. A full socket holds wake-ups it has not read yet: enough.
  Status Doorbell();
  // Whether the socket is down both ways: the peer went, or this end shut it.
  bool Hung() const;
  // Server side: map the client's ring, and tell it that what follows comes through it.
  Status TakeRing(const FrameHeader& h);

  // Reading (shm_reading.cpp, shm_frame_reading.cpp).

  // `pop(wait)` (the inbox's), with the caller reading the socket while it waits: it takes the
  // read token, reads what has come, spins on the socket up to the spin, then sleeps in poll
  // until its deadline. A caller that finds another reading waits for what that one pushes, a
  // millisecond at a time. A wait that reaches its deadline names `what` it waited for.
  // While a caller leads with the read token, the frame it waits for is handed to it in its
  // Claim as ReadFrame reads it, not pushed into the inbox only to be popped again at once (a
  // lock, a queue node and a wake-up each way). `pop` looks at the claim before the inbox.
  struct Claim {
    bool untagged = true;
    uint64_t want = 0;  // a tagged claim: the tag and mask that PopTagged would match
    uint64_t mask = 0;
    bool filled = false;  // ReadFrame put a frame here: no second one is claimed
    bool taken = false;   // and `pop` handed it out
    TaggedMessage message;
  };
  template <typename Pop>
  auto Lead(std::chrono::milliseconds timeout, const char* what, Claim* claim, Pop pop)
      -> decltype(pop(timeout));
  // Whether a receiving caller reads the socket itself (Lead): with a spin, and on a client's
  // end (its frame ring's reader), whose caller then sleeps in poll with no spin rather than
  // waiting for the reader thread to wake it. A server's end without a spin leaves reading to
  // its reader thread, so that what its clients send (frees, credits) is read as it comes.
  bool Leads() const { return limits_.spin.count() > 0 || in_ring_.has_value(); }
  // The reader thread. Where callers do not lead it reads frames as they come, waiting for
  // input in poll (RecvSome). Where they do, it reads only once no caller has for kParked: a paced
  // stream's batch then wakes one thread, the caller's, not two, and a caller that stops reading
  // still has its socket drained.
  void ReadLoop();
  // Wait while a caller reads the socket, or did within kParked; false once closed. A bounded
  // wait on the steady clock (it is the thread's own housekeeping, not a timeout of the caller's).
  // True marks the reader as watching the socket, until a Lead kicks it out (KickReader).
  bool Park();
  // With lead_mutex_, as a caller starts to lead: whether the reader thread watches the socket
  // and must be woken out of its poll. Otherwise it sleeps beside the caller there, and the
  // server's wake-up for a frame wakes both, though only one thread takes it: the other wakes
  // for nothing, inside poll, on every frame of the stream.
  bool KickReader();
  // With the read token: read every frame there is now, without waiting for more, until the
  // inbox holds kReadAheadBytes; false when the connection ended (`why` says how).
  bool ReadReady(std::string* why);
  // Push the frames ReadReady staged, waking the receivers with `wake`; false once the inbox
  // is closed.
  bool PushStaged(bool wake);
  // After the read token is handed back: end the inbox waits of the callers that lead, so that
  // they take the token and read on (Lead says why).
  void PokeLeaders();
  bool Readable() const;
  // The connection is over: refuse further pushes with `why` (empty: the peer closed it) and
  // tell the peer.
  void End(const std::string& why);
  // Read one frame, with the read token (the reader thread, or a leading caller), waiting for
  // its bytes; false when the connection ended (`why` says how).
  bool ReadFrame(std::string* why_out);
  // Read exactly `size` bytes; false when the connection ended, `why` saying how if not by the
  // peer's close. Small reads come out of a staging buffer refilled a chunk at a time (one
  // recvmsg takes many small frames); large ones go straight into `into`.
  bool ReadExactly(void* into, size_t size, std::string* why);
  // ReadExactly once the server writes into the ring: it sleeps on the socket for a wake-up
  // when the ring is empty.
  bool ReadRing(void* into, size_t size, std::string* why);
  // With the read token: sleep until the ring has bytes (true) or the socket ended (false), or
  // a wait mid-frame failed (false, `why` saying so: AwaitSocket).
  bool AwaitRing(std::string* why);
  // With the read token: wait until the socket is readable (true). Mid-frame (frame_started_),
  // no later than `*deadline`, set by the first such wait of a read: a stopped peer must not hold
  // a reader for good (false, `why` saying so).
  bool AwaitSocket(std::optional<Clock::time_point>* deadline, std::string* why);
  // The error of a peer that stopped in the middle of a frame.
  std::string StoppedMidFrame() const;
  // With the read token, once the ring is in use: read the wake-ups (and descriptors) the
  // socket holds without waiting, noting its end.
  void DrainSocket();
  // With the read token: whether a frame's bytes are there to read now (a broken ring says
  // yes, so that the read reports it).
  bool HasBytes();
  // With the read token: the kind of the next frame if it is a message (untagged or tagged)
  // whose header and payload are all in the ring, or in the stage, already (reading it cannot
  // wait); nothing otherwise.
  std::optional<FrameKind> WholeMessageReady();
  // With the read token, the ring in use: whether the next frame is a message whose header and
  // payload are all in the ring; its header is then copied into `h`, and left there.
  bool PeekWholeMessage(FrameHeader* h);
  // With the read token, the ring in use: whether it holds more than a stage's worth.
  bool Ahead() const;
  // One recvmsg, keeping the descriptors that arrive alongside (in order, for region frames).
  // Without MSG_DONTWAIT in `flags` it waits for input in poll first where there is none: a
  // thread asleep in recvmsg would also be woken by the peer's reads of what this end sent.
  ssize_t RecvSome(void* into, size_t size, int flags = 0);
  // Client side, from the ring: a region's descriptor comes over the socket before its frame
  // is written, so it is there or on its way.
  Status AwaitDescriptor(uint64_t index);
  // A region frame: its descriptor arrived with the header, or before it (ring).
  Status MapRegion(const FrameHeader& h);

  int fd_;
  std::atomic<bool> closed_{false};
  std::mutex send_mutex_;
  // What arrived but is not consumed yet: past this the reader stops reading, the socket fills
  // and the sender waits (a slow client never makes memory grow without bound).
  static constexpr int64_t kInboxBytes = int64_t{256} << 20;
  // How far the reader thread reads ahead of the callers (ReadLoop): past this it leaves frames
  // in the ring (or the socket) until the callers have taken half. Unbounded, a reader ahead of
  // a slow caller held a whole kept stream's frames, each in memory it had just faulted in
  // (12 k page faults a run of 100,000 batches), where a bounded one reuses memory in cache.
  static constexpr int64_t kReadAheadBytes = int64_t{256} << 10;
  // How long the reader waits for callers ahead of which it is by kReadAheadBytes before it
  // reads on past that, up to kInboxBytes (past_read_ahead_, until they catch up): a consumer
  // busy elsewhere must not leave its peer's sends waiting until they time out.
  static constexpr auto kReadAheadPatience = std::chrono::milliseconds(50);
  bool past_read_ahead_ = false;  // the reader thread's
  const TransportLimits limits_;
  std::string peer_;
  mutable std::mutex trace_mutex_;
  std::string trace_;  // the client's trace frame (server side)
  internal::Mailbox inbox_;
  // The socket's reading state below is the read token's: the reader thread's, or a caller's
  // that reads while it waits (Lead).
  std::mutex read_mutex_;
  bool frame_started_ = false;   // a byte of the frame being read was taken (the token's)
  Claim* claim_ = nullptr;       // the leading caller's, while it holds the token (Lead)
  bool pushed_unwoken_ = false;  // a frame went into the inbox without waking it (the token's)
  // The reader thread's frames read and not pushed yet (ReadReady stages them, the token's): a
  // push a frame took the inbox's lock twice a batch against the caller's pops, and the two
  // threads met there, each time a futex wait and wake.
  bool staging_ = false;
  std::vector<internal::Mailbox::Pushed> staged_;
  int64_t staged_bytes_ = 0;
  static constexpr size_t kStagedFrames = 16;
  std::atomic<bool> ended_{false};  // End ran: nobody reads again
  std::mutex lead_mutex_;
  std::condition_variable lead_changed_;
  int leaders_ = 0;        // callers in Lead
  bool backlog_ = false;   // the last Lead left more in the socket than its stage took
  bool parked_ = false;    // the reader thread waits in Park
  bool watching_ = false;  // the reader thread is in (or on its way to) its poll of the socket
  // Where callers lead: written once to take the reader thread out of its poll (KickReader).
  int kick_fd_ = -1;
  std::chrono::steady_clock::time_point last_lead_;
  AdaptiveSpin spin_;  // how long a Lead spins (with lead_mutex_)
  static constexpr auto kParked = std::chrono::milliseconds(10);
  std::deque<int> pending_fds_;
  // The client's frame ring (client side: made at connect; read with the read token once the
  // server's kRingStart came), and the server's mapping of it (with send_mutex_).
  std::optional<FrameRing> in_ring_;
  std::atomic<bool> ring_active_{false};
  bool socket_eof_ = false;  // ring in use: the socket ended (read token)
  size_t unwoken_ = 0;       // bytes pushed from the ring since the inbox was last woken
  std::optional<FrameRing> out_ring_;
  static constexpr size_t kStageBytes = 64 << 10;
  FrameMemory frames_;
  std::vector<uint8_t> stage_ = std::vector<uint8_t>(kStageBytes);
  size_t stage_begin_ = 0;
  size_t stage_end_ = 0;
  Segments segments_;
  std::thread reader_;
};

}  // namespace ferry::transport::internal::shm
