// The shared-memory transport's connection: frames over a Unix stream socket, memfd segments
// (and served files) passed with SCM_RIGHTS and mapped read-only by the client, so type-1
// bodies are read in place.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "ferry/core/hex.hpp"
#include "ferry/core/host_buffer.hpp"
#include "transport/frame_memory.hpp"
#include "transport/mailbox.hpp"
#include "transport/shm_common.hpp"

namespace ferry::transport::internal::shm {

namespace {

// Every frame starts with this header, little-endian (the socket never leaves the host).
// kFileRegion is a region over a served file: read-only on both ends, and not sealed (a file
// cannot be), so only the server's promise keeps it from shrinking. kTrace is the client's trace
// (ConnectOptions::trace): sent first, at most once, tag 0, its payload the trace's bytes.
enum class FrameKind : uint8_t {
  kUntagged = 1,
  kTagged = 2,
  kRegion = 3,
  kFileRegion = 4,
  kTrace = 5
};
struct FrameHeader {
  uint8_t kind = 0;
  uint8_t zero[7] = {};
  uint64_t tag = 0;     // the tag, or the region's index
  uint64_t length = 0;  // payload bytes, or the region's size
};
static_assert(sizeof(FrameHeader) == 24);

// The largest payload a peer may announce: a lying length must not make us allocate without
// bound.
constexpr uint64_t kMaxPayload = uint64_t{1} << 36;
constexpr uint64_t kOffsetMask = (uint64_t{1} << kShmOffsetBits) - 1;

class ShmConnection final : public Connection {
 public:
  ShmConnection(int fd, TransportLimits limits)
      : fd_(fd), limits_(WithClock(std::move(limits))), inbox_(kInboxBytes, limits_.clock) {
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
    return inbox_.PopUntagged(timeout);
  }

  Result<TaggedMessage> ReceiveTagged(uint64_t want, uint64_t mask,
                                      std::chrono::milliseconds timeout) override {
    return inbox_.PopTagged(want, mask, timeout);
  }

  void Close() override {
    if (closed_.exchange(true)) return;
    // Wakes the reader (which then closes the inbox) and tells the peer.
    shutdown(fd_, SHUT_RDWR);
    inbox_.Close("this end closed the connection");
  }

  Status ShareRegion(const std::shared_ptr<Region>& region) override {
    auto* shm = dynamic_cast<ShmRegion*>(region.get());
    if (shm == nullptr) return Status::Invalid("the region was not made by a shm listener");
    return SendFrame(shm->lent() ? FrameKind::kFileRegion : FrameKind::kRegion, shm->index(), {},
                     shm->fd(), static_cast<uint64_t>(shm->size()));
  }

  Result<FetchedBody> Fetch(std::span<const BufferRef> refs,
                            std::chrono::milliseconds /*timeout*/) override {
    FetchedBody out;
    out.buffers.reserve(refs.size());
    // The one segment every ref lies in, as is usual (a batch's body is one block), or NULL.
    std::shared_ptr<const Mapping> only;
    std::vector<std::shared_ptr<const Mapping>> of;  // each ref's segment, only when they differ
    {
      std::lock_guard lock(regions_mutex_);
      bool mixed = false;
      for (size_t i = 0; i < refs.size(); ++i) {
        const uint64_t index = refs[i].address >> kShmOffsetBits;
        const uint64_t offset = refs[i].address & kOffsetMask;
        auto it = regions_.find(index);
        if (it == regions_.end()) {
          return Status::Invalid("buffer " + std::to_string(i) + " (address " +
                                 Hex(refs[i].address) + ") names segment " + std::to_string(index) +
                                 ", which the server never shared");
        }
        uint64_t end = 0;
        if (__builtin_add_overflow(offset, refs[i].length, &end) ||
            end > static_cast<uint64_t>(it->second->size())) {
          return Status::Invalid(
              "buffer " + std::to_string(i) + " (offset " + std::to_string(offset) + ", length " +
              std::to_string(refs[i].length) + ") lies outside segment " + std::to_string(index) +
              " of " + std::to_string(it->second->size()) + " bytes");
        }
        if (i == 0) only = it->second;
        mixed = mixed || it->second != only;
        out.buffers.push_back(BufferRef{offset, refs[i].length});
      }
      if (mixed) {
        only = nullptr;
        of.reserve(refs.size());
        for (const BufferRef& r : refs)
          of.push_back(regions_.find(r.address >> kShmOffsetBits)->second);
      }
    }
    if (refs.empty() || only != nullptr) {
      // In place: the bytes are the whole segment, and the arrays keep the mapping.
      if (only != nullptr) out.bytes = SharedBytes{only->data(), only->size(), only};
      out.borrowed = !refs.empty();
      return out;
    }
    // Buffers in several segments: gather them (one copy) so they share one base.
    auto local = std::make_shared<HostBuffer>();
    for (size_t i = 0; i < refs.size(); ++i) {
      const int64_t at = (local->size() + 7) / 8 * 8;
      FERRY_RETURN_NOT_OK(local->Resize(at));
      FERRY_RETURN_NOT_OK(local->Append(
          {of[i]->data() + out.buffers[i].address, static_cast<int64_t>(out.buffers[i].length)}));
      out.buffers[i].address = static_cast<uint64_t>(at);
    }
    out.bytes = SharedBytes{local->data(), local->size(), local};
    out.borrowed = false;
    return out;
  }

 private:
  // Append one frame (its header, stored in `header`, then its pieces) to `iov`.
  static Status AddFrame(FrameKind kind, uint64_t tag, std::span<const ByteSpan> pieces,
                         uint64_t length, FrameHeader* header, std::vector<iovec>* iov) {
    header->kind = static_cast<uint8_t>(kind);
    header->tag = tag;
    header->length = length;
    iov->push_back(iovec{header, sizeof(*header)});
    for (const ByteSpan& p : pieces) {
      if (p.size < 0 || (p.size > 0 && p.data == nullptr)) {
        return Status::Invalid("a message piece is NULL or has a negative size");
      }
      if (p.size == 0) continue;
      header->length += static_cast<uint64_t>(p.size);
      iov->push_back(iovec{const_cast<uint8_t*>(p.data), static_cast<size_t>(p.size)});
    }
    return Status::OK();
  }

  Status SendFrame(FrameKind kind, uint64_t tag, std::span<const ByteSpan> pieces, int pass_fd,
                   uint64_t length = 0) {
    if (closed_.load()) return Status::Unavailable("the connection is closed");
    FrameHeader header;
    std::vector<iovec> iov;
    iov.reserve(pieces.size() + 1);
    FERRY_RETURN_NOT_OK(AddFrame(kind, tag, pieces, length, &header, &iov));
    return SendIov(iov, pass_fd);
  }

  // Send every iovec in order (one sendmsg when the socket takes it all), the descriptor, if any,
  // with the first byte. Frames sent together are never interleaved with another thread's.
  Status SendIov(std::vector<iovec>& iov, int pass_fd) {
    std::lock_guard lock(send_mutex_);
    size_t first = 0;
    bool fd_sent = pass_fd < 0;
    while (first < iov.size()) {
      msghdr msg{};
      msg.msg_iov = iov.data() + first;
      msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
      if (!fd_sent) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
      }
      const ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
          // The socket is full: the peer is slow, stopped, or gone. Wait for room, bounded.
          FERRY_RETURN_NOT_OK(AwaitRoom());
          continue;
        }
        Status st = Status::FromErrno(errno, "sending on the shared-memory socket");
        if (st.code() == StatusCode::kUnavailable) {
          return Status::Unavailable("the connection is closed (the peer went away)");
        }
        return st;
      }
      fd_sent = true;
      // Advance past what was sent; a partial iovec keeps its remainder.
      auto left = static_cast<size_t>(n);
      while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
      if (first < iov.size()) {
        iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
      }
    }
    return Status::OK();
  }

  // Wait until the socket takes more, up to the timeout by the clock; a peer that takes nothing
  // for that long (stopped, or too slow) fails the connection.
  Status AwaitRoom() {
    pollfd p{fd_, POLLOUT, 0};
    FERRY_ASSIGN_OR_RAISE(const int n,
                          limits_.clock->Poll(&p, 1, limits_.clock->After(limits_.timeout)));
    if (n == 0) {
      const std::string why =
          "the peer took nothing for " + std::to_string(limits_.timeout.count()) + " ms (stopped?)";
      // The reason first: the reader, woken by the shutdown, closes the inbox too.
      inbox_.Close(why);
      closed_.store(true);
      shutdown(fd_, SHUT_RDWR);
      return Status::DeadlineExceeded(why);
    }
    if ((p.revents & (POLLERR | POLLHUP)) != 0 && (p.revents & POLLOUT) == 0) {
      return Status::Unavailable("the connection is closed (the peer went away)");
    }
    return Status::OK();
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

  void ReadLoop() {
    std::string why = "the peer closed the connection";
    while (true) {
      FrameHeader h;
      if (!ReadExactly(&h, sizeof(h))) break;
      const bool zero =
          std::all_of(std::begin(h.zero), std::end(h.zero), [](uint8_t b) { return b == 0; });
      if (!zero || h.kind < 1 || h.kind > 5) {
        why = "the peer sent a malformed frame (kind " + std::to_string(h.kind) + ")";
        break;
      }
      if (static_cast<FrameKind>(h.kind) == FrameKind::kRegion ||
          static_cast<FrameKind>(h.kind) == FrameKind::kFileRegion) {
        Status st = MapRegion(h);
        if (!st.ok()) {
          why = "the peer shared a bad segment: " + st.message();
          break;
        }
        continue;
      }
      if (static_cast<FrameKind>(h.kind) == FrameKind::kTrace) {
        if (h.length > kMaxTraceBytes) {
          why = "the peer sent a trace of " + std::to_string(h.length) +
                " bytes, over the limit of " + std::to_string(kMaxTraceBytes);
          break;
        }
        std::string trace(h.length, '\0');
        if (!ReadExactly(trace.data(), h.length)) break;
        std::lock_guard lock(trace_mutex_);
        trace_ = std::move(trace);
        continue;
      }
      const bool untagged = static_cast<FrameKind>(h.kind) == FrameKind::kUntagged;
      const auto limit =
          static_cast<uint64_t>(untagged ? limits_.max_message_bytes : limits_.max_tagged_bytes);
      if (h.length > std::min(limit, kMaxPayload)) {
        why = std::string("the peer announced ") + (untagged ? "a metadata" : "a tagged") +
              " message of " + std::to_string(h.length) + " bytes, over the limit of " +
              std::to_string(std::min(limit, kMaxPayload)) + " bytes";
        break;
      }
      Result<SharedBytes> payload = frames_.Allocate(h.length);
      if (!payload.ok()) {
        why = "out of memory for a message of " + std::to_string(h.length) + " bytes";
        break;
      }
      SharedBytes bytes = std::move(*payload);
      if (!ReadExactly(const_cast<uint8_t*>(bytes.data), h.length)) break;
      // Frames that came in one read (a batch's metadata and its body's list) wake the receiver
      // once, with the last: RecvSome wakes it before it waits for more.
      const bool wake = stage_begin_ >= stage_end_;
      const Status st = static_cast<FrameKind>(h.kind) == FrameKind::kUntagged
                            ? inbox_.PushUntagged(std::move(bytes), wake)
                            : inbox_.PushTagged(TaggedMessage{h.tag, std::move(bytes)}, wake);
      if (!st.ok()) break;  // closed locally
    }
    inbox_.Close(why);
    shutdown(fd_, SHUT_RDWR);
  }

  // A region frame: its descriptor arrived with the header. Map it read-only after checking
  // that the server cannot shrink it under us (a shrunk segment would fault our readers).
  Status MapRegion(const FrameHeader& h) {
    if (pending_fds_.empty())
      return Status::Invalid("segment " + std::to_string(h.tag) + " came without a descriptor");
    const int f = pending_fds_.front();
    pending_fds_.pop_front();
    struct Closer {
      int f;
      ~Closer() { close(f); }
    } closer{f};
    struct stat st {};
    if (fstat(f, &st) != 0)
      return Status::FromErrno(errno, "fstat of segment " + std::to_string(h.tag));
    if (h.length == 0 || h.length > static_cast<uint64_t>(st.st_size) || h.length > kOffsetMask) {
      return Status::Invalid("segment " + std::to_string(h.tag) + " claims " +
                             std::to_string(h.length) + " bytes but holds " +
                             std::to_string(st.st_size));
    }
    // A served file cannot be sealed: it must at least be a plain file (docs/dipc.md names
    // the limit: a file truncated while served faults its readers).
    const bool file = static_cast<FrameKind>(h.kind) == FrameKind::kFileRegion;
    if (file && !S_ISREG(st.st_mode)) {
      return Status::Invalid("file segment " + std::to_string(h.tag) + " is not a regular file");
    }
    const int seals = file ? F_SEAL_SHRINK : fcntl(f, F_GET_SEALS);
    if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
      return Status::Invalid("segment " + std::to_string(h.tag) +
                             " is not sealed against shrinking");
    }
    // A segment the client maps read-only; arrays over it hold it through SharedBytes owners.
    Result<Mapping> pages =
        Mapping::OfFile(f, static_cast<int64_t>(h.length),
                        {.access = MapAccess::kRead, .shared = true}, "a shared segment");
    if (!pages.ok()) return pages.status().WithContext("segment " + std::to_string(h.tag));
    auto m = std::make_shared<const Mapping>(std::move(*pages));
    std::lock_guard lock(regions_mutex_);
    regions_[h.tag] = std::move(m);
    return Status::OK();
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
  std::deque<int> pending_fds_;  // reader thread only
  static constexpr size_t kStageBytes = 64 << 10;
  FrameMemory frames_;                                              // reader thread only
  std::vector<uint8_t> stage_ = std::vector<uint8_t>(kStageBytes);  // reader thread only
  size_t stage_begin_ = 0;
  size_t stage_end_ = 0;
  std::mutex regions_mutex_;
  std::map<uint64_t, std::shared_ptr<const Mapping>> regions_;
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
