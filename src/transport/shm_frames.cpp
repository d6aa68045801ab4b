// The shared-memory transport's frames: building a frame's iovecs and sending them.
#include "transport/shm_frames.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

#include "ferry/core/clock.hpp"

namespace ferry::transport::internal::shm {

namespace {

// Wait until the socket takes more, up to the timeout by the clock.
Status AwaitRoom(int fd, const TransportLimits& limits) {
  pollfd p{fd, POLLOUT, 0};
  FERRY_ASSIGN_OR_RAISE(const int n,
                        limits.clock->Poll(&p, 1, limits.clock->After(limits.timeout)));
  if (n == 0) {
    return Status::DeadlineExceeded("the peer took nothing for " +
                                    std::to_string(limits.timeout.count()) + " ms (stopped?)");
  }
  if ((p.revents & (POLLERR | POLLHUP)) != 0 && (p.revents & POLLOUT) == 0) {
    return Status::Unavailable("the connection is closed (the peer went away)");
  }
  return Status::OK();
}

}  // namespace

Status AddFrame(FrameKind kind, uint64_t tag, std::span<const ByteSpan> pieces, uint64_t length,
                FrameHeader* header, std::vector<iovec>* iov) {
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

Status SendFrames(int fd, std::vector<iovec>& iov, int pass_fd, const TransportLimits& limits) {
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
    const ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        // The socket is full: the peer is slow, stopped, or gone. Wait for room, bounded.
        FERRY_RETURN_NOT_OK(AwaitRoom(fd, limits));
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

}  // namespace ferry::transport::internal::shm
