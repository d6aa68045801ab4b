// The shared-memory transport's connection: construction, sending (to the socket, or into the
// client's frame ring once the server has it), closing; and making the two ends.
#include "transport/shm_connection.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport/shm_common.hpp"

namespace ferry::transport::internal::shm {

namespace {

// The iovec list of one send, emptied: each thread keeps its own, so that a send allocates none
// once the list has grown to its frames' count (SendIov uses it before returning).
std::vector<iovec>& IovScratch() {
  thread_local std::vector<iovec> iov;
  iov.clear();
  return iov;
}

}  // namespace

ShmConnection::ShmConnection(int fd, TransportLimits limits, std::optional<FrameRing> ring)
    : fd_(fd),
      limits_(WithClock(std::move(limits))),
      inbox_(kInboxBytes, limits_.clock, limits_.spin),
      spin_(limits_.spin),
      in_ring_(std::move(ring)) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    peer_ = "pid " + std::to_string(cred.pid);
  }
  if (Leads()) {
    // Without it the reader thread still works, only waking for nothing beside a caller.
    kick_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  reader_ = std::thread([this] { ReadLoop(); });
  pthread_setname_np(reader_.native_handle(), "ferry-shm-read");  // for top, perf and tests
}

ShmConnection::~ShmConnection() {
  Close();
  reader_.join();
  for (int f : pending_fds_) close(f);
  if (kick_fd_ >= 0) close(kick_fd_);
  close(fd_);
}

Status ShmConnection::Send(std::span<const ByteSpan> pieces) {
  return SendFrame(FrameKind::kUntagged, 0, pieces, -1);
}

Status ShmConnection::SendTagged(uint64_t tag, std::span<const ByteSpan> pieces) {
  return SendFrame(FrameKind::kTagged, tag, pieces, -1);
}

Status ShmConnection::SendMessageAndBody(std::span<const ByteSpan> metadata, uint64_t tag,
                                         std::span<const ByteSpan> body) {
  if (closed_.load()) return Status::Unavailable("the connection is closed");
  FrameHeader headers[2];
  std::vector<iovec>& iov = IovScratch();
  iov.reserve(metadata.size() + body.size() + 2);
  FERRY_RETURN_NOT_OK(AddFrame(FrameKind::kUntagged, 0, metadata, 0, &headers[0], &iov));
  FERRY_RETURN_NOT_OK(AddFrame(FrameKind::kTagged, tag, body, 0, &headers[1], &iov));
  return SendIov(iov, -1);
}

Status ShmConnection::OfferRing(int fd) {
  Status st = in_ring_ ? SendFrame(FrameKind::kRing, 0, {}, fd, in_ring_->mapped_bytes())
                       : Status::Invalid("this connection was made without a ring to offer");
  close(fd);
  return st;
}

Status ShmConnection::SendTrace(const std::string& trace) {
  const ByteSpan piece{reinterpret_cast<const uint8_t*>(trace.data()),
                       static_cast<int64_t>(trace.size())};
  return SendFrame(FrameKind::kTrace, 0, {&piece, 1}, -1);
}

void ShmConnection::Close() {
  if (closed_.exchange(true)) return;
  // Wakes the reader (which then closes the inbox) and tells the peer.
  shutdown(fd_, SHUT_RDWR);
  inbox_.Close("this end closed the connection");
  {
    std::lock_guard lock(lead_mutex_);  // a parked reader sees closed_ once woken
  }
  lead_changed_.notify_all();
}

Status ShmConnection::ShareRegion(const std::shared_ptr<Region>& region) {
  auto* shm = dynamic_cast<ShmRegion*>(region.get());
  if (shm == nullptr) return Status::Invalid("the region was not made by a shm listener");
  if (!shm->lent()) FERRY_RETURN_NOT_OK(shm->Shareable());
  return SendFrame(shm->lent() ? FrameKind::kFileRegion : FrameKind::kRegion, shm->index(), {},
                   shm->fd(), static_cast<uint64_t>(shm->size()));
}

Status ShmConnection::SendFrame(FrameKind kind, uint64_t tag, std::span<const ByteSpan> pieces,
                                int pass_fd, uint64_t length) {
  if (closed_.load()) return Status::Unavailable("the connection is closed");
  FrameHeader header;
  std::vector<iovec>& iov = IovScratch();
  iov.reserve(pieces.size() + 1);
  FERRY_RETURN_NOT_OK(AddFrame(kind, tag, pieces, length, &header, &iov));
  return SendIov(iov, pass_fd);
}

Status ShmConnection::SendIov(std::vector<iovec>& iov, int pass_fd) {
  std::lock_guard lock(send_mutex_);
  Status st = out_ring_ ? SendToRing(iov, pass_fd) : SendFrames(fd_, iov, pass_fd, limits_);
  if (st.code() == StatusCode::kDeadlineExceeded ||
      (out_ring_ && st.code() == StatusCode::kInvalidArgument)) {
    // The reason first: the reader, woken by the shutdown, closes the inbox too.
    inbox_.Close(st.message());
    closed_.store(true);
    shutdown(fd_, SHUT_RDWR);
  }
  return st;
}

Status ShmConnection::SendToRing(std::span<const iovec> iov, int pass_fd) {
  // A write to the ring succeeds while it has room, gone peer or not: the reader, which saw the
  // socket end, says so instead (as a send on the ended socket would).
  if (ended_.load()) return Status::Unavailable("the connection is closed (the peer went away)");
  if (pass_fd >= 0) {
    uint8_t wake = 0;
    std::vector<iovec> one{iovec{&wake, 1}};
    FERRY_RETURN_NOT_OK(SendFrames(fd_, one, pass_fd, limits_));
  }
  return out_ring_->Write(
      iov, *limits_.clock, limits_.timeout, [this] { return Doorbell(); },
      [this] { return closed_.load() || ended_.load() || Hung(); });
}

Status ShmConnection::Doorbell() {
  const uint8_t wake = 0;
  while (send(fd_, &wake, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return Status::OK();
    return Status::Unavailable("the connection is closed (the peer went away)");
  }
  return Status::OK();
}

bool ShmConnection::Hung() const {
  pollfd p{fd_, 0, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)) != 0;
}

Status ShmConnection::TakeRing(const FrameHeader& h) {
  if (in_ring_) return Status::Invalid("a server offered a ring to its client");
  if (pending_fds_.empty()) return Status::Invalid("it came without a descriptor");
  const int f = pending_fds_.front();
  pending_fds_.pop_front();
  Result<FrameRing> ring = FrameRing::Map(f, h.length);
  close(f);
  FERRY_RETURN_NOT_OK(ring.status());
  std::lock_guard lock(send_mutex_);
  if (out_ring_) return Status::Invalid("a second ring came");
  FrameHeader start;
  std::vector<iovec> iov;
  FERRY_RETURN_NOT_OK(AddFrame(FrameKind::kRingStart, 0, {}, 0, &start, &iov));
  FERRY_RETURN_NOT_OK(SendFrames(fd_, iov, -1, limits_));
  out_ring_.emplace(std::move(*ring));
  return Status::OK();
}

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
  int ring_fd = -1;
  Result<FrameRing> ring = FrameRing::Create(kRingBytes, &ring_fd);
  if (!ring.ok()) {
    close(fd);
    return ring.status();
  }
  auto conn = std::make_unique<ShmConnection>(fd, std::move(limits), std::move(*ring));
  FERRY_RETURN_NOT_OK(conn->OfferRing(ring_fd));
  if (!trace.empty()) FERRY_RETURN_NOT_OK(conn->SendTrace(trace));
  return std::unique_ptr<Connection>(std::move(conn));
}

}  // namespace ferry::transport::internal::shm
