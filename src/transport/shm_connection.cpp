// The shared-memory transport's connection: frames over a Unix stream socket, memfd segments
// (and served files) passed with SCM_RIGHTS and mapped read-only by the client, so type-1
// bodies are read in place.
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/frame_memory.hpp"
#include "transport/mailbox.hpp"
#include "transport/shm_common.hpp"
#include "transport/shm_frames.hpp"
#include "transport/shm_segments.hpp"

namespace ferry::transport::internal::shm {

namespace {

class ShmConnection final : public Connection {
 public:
  ShmConnection(int fd, TransportLimits limits)
      : fd_(fd),
        limits_(WithClock(std::move(limits))),
        inbox_(kInboxBytes, limits_.clock, limits_.spin) {
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      peer_ = "pid " + std::to_string(cred.pid);
    }
    reader_ = std::thread([this] { ReadLoop(); });
  }

  ~ShmConnection() override {
    Close();
    reader_.join();
    for (int f : pending_fds_) close(f);
    close(fd_);
  }

  Status Send(std::span<const ByteSpan> pieces) override {
    return SendFrame(FrameKind::kUntagged, 0, pieces, -1);
  }

  Status SendTagged(uint64_t tag, std::span<const ByteSpan> pieces) override {
    return SendFrame(FrameKind::kTagged, tag, pieces, -1);
  }

  Status SendMessageAndBody(std::span<const ByteSpan> metadata, uint64_t tag,
                            std::span<const ByteSpan> body) override {
    if (closed_.load()) return Status::Unavailable("the connection is closed");
    FrameHeader headers[2];
    std::vector<iovec> iov;
    iov.reserve(metadata.size() + body.size() + 2);
    FERRY_RETURN_NOT_OK(AddFrame(FrameKind::kUntagged, 0, metadata, 0, &headers[0], &iov));
    FERRY_RETURN_NOT_OK(AddFrame(FrameKind::kTagged, tag, body, 0, &headers[1], &iov));
    return SendIov(iov, -1);
  }

  /// The shared-memory scheme is ferry's own: both ends always speak its extensions.
  bool extensions() const override { return true; }
  std::string peer() const override { return peer_; }
  std::string trace() const override {
    std::lock_guard lock(trace_mutex_);
    return trace_;
  }
  /// Client side: send the trace frame (before anything else).
  Status SendTrace(const std::string& trace) {
    const ByteSpan piece{reinterpret_cast<const uint8_t*>(trace.data()),
                         static_cast<int64_t>(trace.size())};
    return SendFrame(FrameKind::kTrace, 0, {&piece, 1}, -1);
  }

  Result<SharedBytes> Receive(std::chrono::milliseconds timeout) override {
    return Lead(timeout, [this](std::chrono::milliseconds t) { return inbox_.PopUntagged(t); });
  }

  Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                      std::chrono::milliseconds timeout) override {
    return Lead(timeout,
                [&](std::chrono::milliseconds t) { return inbox_.PopTagged(want, mask, t); });
  }

  void Close() override {
    if (closed_.exchange(true)) return;
    // Wakes the reader (which then closes the inbox) and tells the peer.
    shutdown(fd_, SHUT_RDWR);
    inbox_.Close("this end closed the connection");
    {
      std::lock_guard lock(lead_mutex_);  // a parked reader sees closed_ once woken
    }
    lead_changed_.notify_all();
  }

  Status ShareRegion(const std::shared_ptr<Region>& region) override {
    auto* shm = dynamic_cast<ShmRegion*>(region.get());
    if (shm == nullptr) return Status::Invalid("the region was not made by a shm listener");
    return SendFrame(shm->lent() ? FrameKind::kFileRegion : FrameKind::kRegion, shm->index(), {},
                     shm->fd(), static_cast<uint64_t>(shm->size()));
  }

  Result<FetchedBody> Fetch(std::span<const BufferRef> refs,
                            std::chrono::milliseconds /*timeout*/) override {
    return segments_.Fetch(refs);
  }

 private:
  Status SendFrame(FrameKind kind, uint64_t tag, std::span<const ByteSpan> pieces, int pass_fd,
                   uint64_t length = 0) {
    if (closed_.load()) return Status::Unavailable("the connection is closed");
    FrameHeader header;
    std::vector<iovec> iov;
    iov.reserve(pieces.size() + 1);
    FERRY_RETURN_NOT_OK(AddFrame(kind, tag, pieces, length, &header, &iov));
    return SendIov(iov, pass_fd);
  }

  // Frames sent together are never interleaved with another thread's. A peer that took nothing
  // for the timeout fails the connection.
  Status SendIov(std::vector<iovec>& iov, int pass_fd) {
    std::lock_guard lock(send_mutex_);
    Status st = SendFrames(fd_, iov, pass_fd, limits_);
    if (st.code() == StatusCode::kDeadlineExceeded) {
      // The reason first: the reader, woken by the shutdown, closes the inbox too.
      inbox_.Close(st.message());
      closed_.store(true);
      shutdown(fd_, SHUT_RDWR);
    }
    return st;
  }

  // Read exactly `size` bytes. Small reads come out of a staging buffer refilled a chunk at a
  // time (one recvmsg takes many small frames); large ones go straight into `into`.
  bool ReadExactly(void* into, size_t size) {
    auto* p = static_cast<uint8_t*>(into);
    while (size > 0) {
      if (stage_begin_ < stage_end_) {
        const size_t n = std::min(size, stage_end_ - stage_begin_);
        std::memcpy(p, stage_.data() + stage_begin_, n);
        stage_begin_ += n;
        p += n;
        size -= n;
        continue;
      }
      if (size >= kStageBytes) {
        const ssize_t n = RecvSome(p, size);
        if (n <= 0) return false;
        p += n;
        size -= static_cast<size_t>(n);
        continue;
      }
      const ssize_t n = RecvSome(stage_.data(), kStageBytes);
      if (n <= 0) return false;
      stage_begin_ = 0;
      stage_end_ = static_cast<size_t>(n);
    }
    return true;
  }

  // One recvmsg, keeping the descriptors that arrive alongside (in order, for region frames).
  ssize_t RecvSome(void* into, size_t size) {
    inbox_.Wake();  // what was pushed without waking, before this read may wait
    while (true) {
      iovec iov{into, size};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      const ssize_t n = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return n;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
          const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
          for (size_t k = 0; k < count; ++k) {
            int f = -1;
            std::memcpy(&f, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
            pending_fds_.push_back(f);
          }
        }
      }
      return n;
    }
  }

  // The reader thread. Without a spin it reads frames as they come, blocking in recvmsg. With
  // one, a receiving caller reads the socket itself (Lead) and this thread reads only once no
  // caller has for kParked: a paced stream's batch then wakes one thread, the caller's, not two,
  // and a caller that stops reading still has its socket drained.
  void ReadLoop() {
    std::string why = "the peer closed the connection";
    if (limits_.spin.count() <= 0) {
      while (ReadFrame(&why)) {
      }
    } else {
      while (Park()) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, -1) < 0 && errno != EINTR) break;
        if (!Park()) break;  // a caller that took to reading meanwhile reads what came
        std::unique_lock token(read_mutex_, std::try_to_lock);
        if (!token) continue;  // a caller reads
        if (ended_.load() || !ReadReady(&why)) break;
      }
    }
    End(why);
  }

  // Wait while a caller reads the socket, or did within kParked; false once closed. A bounded
  // wait on the steady clock (it is the thread's own housekeeping, not a timeout of the caller's).
  bool Park() {
    std::unique_lock lock(lead_mutex_);
    while (!closed_.load()) {
      const auto since = std::chrono::steady_clock::now() - last_lead_;
      const bool recent = !backlog_ && since < kParked;
      if (leaders_ == 0 && !recent) return true;
      parked_ = true;
      lead_changed_.wait_for(lock, leaders_ > 0 || !recent ? kParked : kParked - since);
      parked_ = false;
    }
    return false;
  }

  // With the read token: read every frame there is now, without waiting for more; false when
  // the connection ended (`why` says how).
  bool ReadReady(std::string* why) {
    while (stage_begin_ < stage_end_ || Readable()) {
      if (!ReadFrame(why)) return false;
    }
    return true;
  }

  bool Readable() const {
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
  }

  // `pop(wait)` (the inbox's), with the caller reading the socket while it waits: it takes the
  // read token, reads what has come, spins on the socket up to the spin, then sleeps in poll
  // until its deadline. A caller that finds another reading waits for what that one pushes, a
  // millisecond at a time.
  template <typename Pop>
  auto Lead(std::chrono::milliseconds timeout, Pop pop) -> decltype(pop(timeout)) {
    using std::chrono::milliseconds;
    if (limits_.spin.count() <= 0) return pop(timeout);
    auto r = pop(milliseconds(0));
    const auto waiting = [&] {
      return !r.ok() && r.status().code() == StatusCode::kDeadlineExceeded;
    };
    if (!waiting()) return r;
    const Clock& clock = *limits_.clock;
    const auto deadline = clock.After(timeout);
    const auto spin_until = std::chrono::steady_clock::now() +
                            std::min<std::chrono::microseconds>(limits_.spin, timeout);
    {
      std::lock_guard lock(lead_mutex_);
      ++leaders_;
    }
    bool backlog = false;
    while (waiting()) {
      std::unique_lock token(read_mutex_, std::try_to_lock);
      if (!token) {
        if (timeout.count() <= 0) break;  // a look: another reads, and what it took is looked at
        const auto left = std::chrono::ceil<milliseconds>(deadline - clock.Now());
        if (left.count() <= 0) break;
        r = pop(std::min(left, milliseconds(1)));
        continue;
      }
      std::string why = "the peer closed the connection";
      // The reader thread may have pushed what this caller waits for after its last look and
      // before it took the token: the socket is then empty, and only the inbox has it.
      r = pop(milliseconds(0));
      if (!waiting()) break;
      if (ended_.load()) {
        r = pop(milliseconds(0));  // the inbox is closed: it says why
        break;
      }
      while (waiting() && (stage_begin_ < stage_end_ || Readable())) {
        if (!ReadFrame(&why)) {
          End(why);
          break;
        }
        r = pop(milliseconds(0));
      }
      // A read that filled the stage left more in the socket: the stream is ahead of us.
      backlog = backlog || stage_end_ == kStageBytes;
      if (!waiting()) break;
      if (ended_.load()) {
        r = pop(milliseconds(0));
        break;
      }
      if (timeout.count() <= 0) break;  // a look: what had come is read
      if (std::chrono::steady_clock::now() < spin_until) {
        CpuRelax();
        continue;
      }
      pollfd p{fd_, POLLIN, 0};
      Result<int> n = clock.Poll(&p, 1, deadline);
      if (!n.ok()) {
        r = n.status();
        break;
      }
      // The deadline (r says so); a clock's poll may also end early with nothing, to look again.
      if (*n == 0 && clock.Now() >= deadline) break;
    }
    bool resume = false;
    {
      std::lock_guard lock(lead_mutex_);
      --leaders_;
      last_lead_ = std::chrono::steady_clock::now();
      backlog_ = backlog;
      resume = backlog && parked_ && leaders_ == 0;
    }
    // A stream that is ahead of the caller is read best by the reader thread, on the other core,
    // while the caller decodes; one the caller waits for keeps it parked, so that a batch wakes
    // one thread, not two.
    if (resume) lead_changed_.notify_all();
    return r;
  }

  static void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // The connection is over: refuse further pushes with `why` and tell the peer.
  void End(const std::string& why) {
    inbox_.Close(why);  // first: whoever sees ended_ finds the inbox closed, and why
    ended_.store(true);
    shutdown(fd_, SHUT_RDWR);
  }

  // Read one frame, with the read token (the reader thread, or a leading caller), waiting for
  // its bytes; false when the connection ended (`why` says how).
  bool ReadFrame(std::string* why_out) {
    std::string& why = *why_out;
    FrameHeader h;
    if (!ReadExactly(&h, sizeof(h))) return false;
    const bool zero =
        std::all_of(std::begin(h.zero), std::end(h.zero), [](uint8_t b) { return b == 0; });
    if (!zero || h.kind < 1 || h.kind > 5) {
      why = "the peer sent a malformed frame (kind " + std::to_string(h.kind) + ")";
      return false;
    }
    if (static_cast<FrameKind>(h.kind) == FrameKind::kRegion ||
        static_cast<FrameKind>(h.kind) == FrameKind::kFileRegion) {
      Status st = MapRegion(h);
      if (!st.ok()) {
        why = "the peer shared a bad segment: " + st.message();
        return false;
      }
      return true;
    }
    if (static_cast<FrameKind>(h.kind) == FrameKind::kTrace) {
      if (h.length > kMaxTraceBytes) {
        why = "the peer sent a trace of " + std::to_string(h.length) +
              " bytes, over the limit of " + std::to_string(kMaxTraceBytes);
        return false;
      }
      std::string trace(h.length, '\0');
      if (!ReadExactly(trace.data(), h.length)) return false;
      std::lock_guard lock(trace_mutex_);
      trace_ = std::move(trace);
      return true;
    }
    const bool untagged = static_cast<FrameKind>(h.kind) == FrameKind::kUntagged;
    const auto limit =
        static_cast<uint64_t>(untagged ? limits_.max_message_bytes : limits_.max_tagged_bytes);
    if (h.length > std::min(limit, kMaxPayload)) {
      why = std::string("the peer announced ") + (untagged ? "a metadata" : "a tagged") +
            " message of " + std::to_string(h.length) + " bytes, over the limit of " +
            std::to_string(std::min(limit, kMaxPayload)) + " bytes";
      return false;
    }
    Result<SharedBytes> payload = frames_.Allocate(h.length);
    if (!payload.ok()) {
      why = "out of memory for a message of " + std::to_string(h.length) + " bytes";
      return false;
    }
    SharedBytes bytes = std::move(*payload);
    if (!ReadExactly(const_cast<uint8_t*>(bytes.data), h.length)) return false;
    // Frames that came in one read (a batch's metadata and its body's list) wake the receiver
    // once, with the last: RecvSome wakes it before it waits for more.
    const bool wake = stage_begin_ >= stage_end_;
    const Status st = static_cast<FrameKind>(h.kind) == FrameKind::kUntagged
                          ? inbox_.PushUntagged(std::move(bytes), wake)
                          : inbox_.PushTagged(TaggedMessage{h.tag, std::move(bytes)}, wake);
    if (!st.ok()) return false;  // closed locally
    return true;
  }

  // A region frame: its descriptor arrived with the header.
  Status MapRegion(const FrameHeader& h) {
    if (pending_fds_.empty())
      return Status::Invalid("segment " + std::to_string(h.tag) + " came without a descriptor");
    const int f = pending_fds_.front();
    pending_fds_.pop_front();
    return segments_.Map(h.tag, h.length, static_cast<FrameKind>(h.kind) == FrameKind::kFileRegion,
                         f);
  }

  int fd_;
  std::atomic<bool> closed_{false};
  std::mutex send_mutex_;
  // What arrived but is not consumed yet: past this the reader stops reading, the socket fills
  // and the sender waits (a slow client never makes memory grow without bound).
  static constexpr int64_t kInboxBytes = int64_t{256} << 20;
  const TransportLimits limits_;
  std::string peer_;
  mutable std::mutex trace_mutex_;
  std::string trace_;  // the client's trace frame (server side)
  internal::Mailbox inbox_;
  // The socket's reading state below is the read token's: the reader thread's, or a caller's
  // that reads while it waits (Lead, with a spin).
  std::mutex read_mutex_;
  std::atomic<bool> ended_{false};  // End ran: nobody reads again
  std::mutex lead_mutex_;
  std::condition_variable lead_changed_;
  int leaders_ = 0;       // callers in Lead
  bool backlog_ = false;  // the last Lead left more in the socket than its stage took
  bool parked_ = false;   // the reader thread waits in Park
  std::chrono::steady_clock::time_point last_lead_;
  static constexpr auto kParked = std::chrono::milliseconds(10);
  std::deque<int> pending_fds_;
  static constexpr size_t kStageBytes = 64 << 10;
  FrameMemory frames_;
  std::vector<uint8_t> stage_ = std::vector<uint8_t>(kStageBytes);
  size_t stage_begin_ = 0;
  size_t stage_end_ = 0;
  Segments segments_;
  std::thread reader_;
};

}  // namespace

// A leading '@' names the abstract namespace, which vanishes with the
Result<socklen_t> MakeAddress(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) {
    return Status::Invalid("shared-memory socket path \"" + path + "\" is empty or longer than " +
                           std::to_string(sizeof(addr->sun_path) - 1) + " bytes");
  }
  std::memcpy(addr->sun_path, path.data(), path.size());
  if (path[0] == '@') addr->sun_path[0] = '\0';
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() +
                                (path[0] == '@' ? 0 : 1));
}

std::unique_ptr<Connection> MakeConnection(int fd, TransportLimits limits) {
  return std::make_unique<ShmConnection>(fd, std::move(limits));
}

Result<std::unique_ptr<Connection>> MakeClientConnection(int fd, TransportLimits limits,
                                                         const std::string& trace) {
  auto conn = std::make_unique<ShmConnection>(fd, std::move(limits));
  if (!trace.empty()) FERRY_RETURN_NOT_OK(conn->SendTrace(trace));
  return std::unique_ptr<Connection>(std::move(conn));
}

}  // namespace ferry::transport::internal::shm
