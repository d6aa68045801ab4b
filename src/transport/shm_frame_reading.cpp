// The shared-memory transport's connection, reading frames with the read token: from the socket
// through its stage, or from the client's frame ring, with the region descriptors that come
// beside them. A wait mid-frame is bounded by the connection's timeout; between frames a reader
// waits as long as it must.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "transport/shm_common.hpp"
#include "transport/shm_connection.hpp"

namespace ferry::transport::internal::shm {

namespace {

// Whether `st` is OK; if not, `why` says so after `prefix` (what the peer got wrong).
bool Explained(const Status& st, const char* prefix, std::string* why) {
  if (st.ok()) return true;
  *why = prefix + st.message();
  return false;
}

}  // namespace

bool ShmConnection::ReadFrame(std::string* why_out) {
  std::string& why = *why_out;
  FrameHeader h;
  frame_started_ = false;  // set once a byte of this frame is taken (AwaitSocket)
  // A message whole in the ring already is taken with its header at once (one hand-back).
  const bool whole = PeekWholeMessage(&h);
  if (!whole && !ReadExactly(&h, sizeof(h), &why)) return false;
  const bool zero =
      std::all_of(std::begin(h.zero), std::end(h.zero), [](uint8_t b) { return b == 0; });
  if (!zero || h.kind < 1 || h.kind > 7) {
    why = "the peer sent a malformed frame (kind " + std::to_string(h.kind) + ")";
    return false;
  }
  if (static_cast<FrameKind>(h.kind) == FrameKind::kRing) {
    return Explained(TakeRing(h), "the peer offered a bad frame ring: ", &why);
  }
  if (static_cast<FrameKind>(h.kind) == FrameKind::kRingStart) {
    if (!in_ring_ || ring_active_.load() || h.length != 0) {
      why = "the peer sent a ring start that was not asked for";
      return false;
    }
    // What the stage holds past this frame is wake-ups.
    stage_begin_ = stage_end_ = 0;
    ring_active_.store(true);
    return true;
  }
  if (static_cast<FrameKind>(h.kind) == FrameKind::kRegion ||
      static_cast<FrameKind>(h.kind) == FrameKind::kFileRegion) {
    return Explained(MapRegion(h), "the peer shared a bad segment: ", &why);
  }
  if (static_cast<FrameKind>(h.kind) == FrameKind::kTrace) {
    if (h.length > kMaxTraceBytes) {
      why = "the peer sent a trace of " + std::to_string(h.length) + " bytes, over the limit of " +
            std::to_string(kMaxTraceBytes);
      return false;
    }
    std::string trace(h.length, '\0');
    if (!ReadExactly(trace.data(), h.length, &why)) return false;
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
  if (whole) {
    in_ring_->TakeAfter(sizeof(h), const_cast<uint8_t*>(bytes.data), h.length);
  } else if (!ReadExactly(const_cast<uint8_t*>(bytes.data), h.length, &why)) {
    return false;
  }
  // Frames that came in one read (a batch's metadata and its body's list) wake the receiver
  // once, with the last: RecvSome wakes it before it waits for more. From the ring, frames
  // wake it when the ring is empty, or every kStageBytes.
  bool wake = stage_begin_ >= stage_end_;
  if (ring_active_.load(std::memory_order_relaxed)) {
    unwoken_ += sizeof(h) + h.length;
    Result<uint64_t> ready = in_ring_->Readable();
    wake = !ready.ok() || *ready == 0 || unwoken_ >= kStageBytes;
    if (wake) unwoken_ = 0;
  }
  if (Claim* c = claim_; c != nullptr && !c->filled && c->untagged == untagged &&
                         (untagged || (h.tag & c->mask) == (c->want & c->mask))) {
    // What the leading caller waits for: the inbox holds nothing it matches (it looked with
    // the token held, and only the token's holder pushes), so it is next either way.
    c->message = TaggedMessage{h.tag, std::move(bytes)};
    c->filled = true;
    if (wake && pushed_unwoken_) inbox_.Wake();  // as a push that wakes would have
    pushed_unwoken_ = pushed_unwoken_ && !wake;
    return true;
  }
  if (staging_) {
    // The reader thread's: pushed a few frames at a time (PushStaged), and at once when the
    // frame wakes the receivers.
    staged_bytes_ += h.length;
    staged_.push_back({untagged, TaggedMessage{h.tag, std::move(bytes)}});
    return !(wake || staged_.size() >= kStagedFrames) || PushStaged(wake);
  }
  const Status st = untagged ? inbox_.PushUntagged(std::move(bytes), wake)
                             : inbox_.PushTagged(TaggedMessage{h.tag, std::move(bytes)}, wake);
  if (!st.ok()) return false;  // closed locally
  pushed_unwoken_ = !wake;
  return true;
}

bool ShmConnection::PushStaged(bool wake) {
  if (staged_.empty()) return true;
  staged_bytes_ = 0;
  if (!inbox_.PushAll(&staged_, wake).ok()) return false;  // closed locally
  pushed_unwoken_ = !wake;
  return true;
}

bool ShmConnection::ReadExactly(void* into, size_t size, std::string* why) {
  if (ring_active_.load(std::memory_order_relaxed)) return ReadRing(into, size, why);
  auto* p = static_cast<uint8_t*>(into);
  std::optional<Clock::time_point> deadline;  // of a wait mid-frame (AwaitSocket)
  while (size > 0) {
    if (stage_begin_ < stage_end_) {
      const size_t n = std::min(size, stage_end_ - stage_begin_);
      std::memcpy(p, stage_.data() + stage_begin_, n);
      stage_begin_ += n;
      p += n;
      size -= n;
      frame_started_ = true;
      continue;
    }
    if (frame_started_ && !AwaitSocket(&deadline, why)) return false;
    if (size >= kStageBytes) {
      const ssize_t n = RecvSome(p, size);
      if (n <= 0) return false;
      p += n;
      size -= static_cast<size_t>(n);
      frame_started_ = true;
      continue;
    }
    const ssize_t n = RecvSome(stage_.data(), kStageBytes);
    if (n <= 0) return false;
    stage_begin_ = 0;
    stage_end_ = static_cast<size_t>(n);
  }
  return true;
}

bool ShmConnection::ReadRing(void* into, size_t size, std::string* why) {
  auto* p = static_cast<uint8_t*>(into);
  while (size > 0) {
    Result<uint64_t> ready = in_ring_->Readable();
    if (!ready.ok()) {
      *why = ready.status().message();
      return false;
    }
    if (*ready == 0) {
      if (!AwaitRing(why)) return false;
      continue;
    }
    const uint64_t n = std::min<uint64_t>(size, *ready);
    in_ring_->Take(p, n);
    frame_started_ = true;
    p += n;
    size -= n;
  }
  return true;
}

bool ShmConnection::AwaitRing(std::string* why) {
  std::optional<Clock::time_point> deadline;
  while (in_ring_->ArmSleep(0)) {
    if (socket_eof_) {
      in_ring_->Disarm(0);
      return false;
    }
    const bool awake = AwaitSocket(&deadline, why);
    in_ring_->Disarm(0);
    if (!awake) return false;
    DrainSocket();
  }
  return true;
}

bool ShmConnection::AwaitSocket(std::optional<Clock::time_point>* deadline, std::string* why) {
  // What was read and not pushed, or pushed without waking, before this read may wait.
  (void)PushStaged(false);
  inbox_.Wake();
  pollfd p{fd_, POLLIN, 0};
  if (!frame_started_) {
    (void)poll(&p, 1, -1);  // between frames an idle peer is no fault
    return true;
  }
  const Clock& clock = *limits_.clock;
  if (!deadline->has_value()) *deadline = clock.After(limits_.timeout);
  while (true) {
    Result<int> n = clock.Poll(&p, 1, **deadline);
    if (!n.ok() || *n > 0) return true;  // the read that follows takes what came, or finds why not
    if (clock.Now() >= **deadline) {
      *why = StoppedMidFrame();
      return false;
    }
  }
}

std::string ShmConnection::StoppedMidFrame() const {
  return "the peer sent part of a frame, then nothing for " +
         std::to_string(limits_.timeout.count()) + " ms (stopped?)";
}

void ShmConnection::DrainSocket() {
  while (!socket_eof_) {
    const ssize_t n = RecvSome(stage_.data(), kStageBytes, MSG_DONTWAIT);
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) socket_eof_ = true;
  }
  stage_begin_ = stage_end_ = 0;
}

bool ShmConnection::HasBytes() {
  if (ring_active_.load(std::memory_order_relaxed)) {
    Result<uint64_t> ready = in_ring_->Readable();
    return !ready.ok() || *ready > 0;
  }
  return stage_begin_ < stage_end_ || Readable();
}

std::optional<FrameKind> ShmConnection::WholeMessageReady() {
  FrameHeader h;
  if (ring_active_.load(std::memory_order_relaxed)) {
    if (!PeekWholeMessage(&h)) return std::nullopt;
    return static_cast<FrameKind>(h.kind);
  }
  const uint64_t have = stage_end_ - stage_begin_;
  if (stage_begin_ >= stage_end_ || have < sizeof(h)) return std::nullopt;
  std::memcpy(&h, stage_.data() + stage_begin_, sizeof(h));
  const auto kind = static_cast<FrameKind>(h.kind);
  if (kind != FrameKind::kUntagged && kind != FrameKind::kTagged) return std::nullopt;
  if (h.length > have - sizeof(h)) return std::nullopt;
  return kind;
}

bool ShmConnection::PeekWholeMessage(FrameHeader* h) {
  if (!ring_active_.load(std::memory_order_relaxed)) return false;
  Result<uint64_t> ready = in_ring_->Readable();
  if (!ready.ok() || *ready < sizeof(*h)) return false;
  in_ring_->Peek(h, sizeof(*h));
  const auto kind = static_cast<FrameKind>(h->kind);
  if (kind != FrameKind::kUntagged && kind != FrameKind::kTagged) return false;
  return h->length <= *ready - sizeof(*h);
}

bool ShmConnection::Ahead() const {
  Result<uint64_t> ready = in_ring_->Readable();
  return ready.ok() && *ready >= kStageBytes;
}

ssize_t ShmConnection::RecvSome(void* into, size_t size, int flags) {
  // What was read and not pushed, or pushed without waking, before this read may wait.
  (void)PushStaged(false);
  inbox_.Wake();
  while (true) {
    iovec iov{into, size};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    // A read that may wait looks first and then waits in poll for input alone: a thread asleep
    // in recvmsg is on the socket's one wait queue, and the peer's every read of what this end
    // sent (its wake-up bytes) would wake it for nothing.
    const ssize_t n = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT | flags);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && (flags & MSG_DONTWAIT) == 0) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, -1) < 0 && errno != EINTR) return -1;
      continue;
    }
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

Status ShmConnection::AwaitDescriptor(uint64_t index) {
  const Clock& clock = *limits_.clock;
  const auto deadline = clock.After(limits_.timeout);
  while (pending_fds_.empty() && !socket_eof_) {
    pollfd p{fd_, POLLIN, 0};
    FERRY_ASSIGN_OR_RAISE(const int n, clock.Poll(&p, 1, deadline));
    if (n == 0) break;
    DrainSocket();
  }
  if (pending_fds_.empty())
    return Status::Invalid("segment " + std::to_string(index) + " came without a descriptor");
  return Status::OK();
}

Status ShmConnection::MapRegion(const FrameHeader& h) {
  if (ring_active_.load(std::memory_order_relaxed)) FERRY_RETURN_NOT_OK(AwaitDescriptor(h.tag));
  if (pending_fds_.empty())
    return Status::Invalid("segment " + std::to_string(h.tag) + " came without a descriptor");
  const int f = pending_fds_.front();
  pending_fds_.pop_front();
  return segments_.Map(h.tag, h.length, static_cast<FrameKind>(h.kind) == FrameKind::kFileRegion,
                       f);
}

}  // namespace ferry::transport::internal::shm
