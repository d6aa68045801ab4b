// The shared-memory transport's connection, reading: the reader thread, a waiting caller's
// reads (Lead), and frames from the socket or from the client's frame ring.
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

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

template <typename Pop>
auto ShmConnection::Lead(std::chrono::milliseconds timeout, const char* what, Pop pop)
    -> decltype(pop(timeout)) {
  using std::chrono::milliseconds;
  if (!Leads()) return pop(timeout);
  auto r = pop(milliseconds(0));
  const auto waiting = [&] {
    return !r.ok() && r.status().code() == StatusCode::kDeadlineExceeded;
  };
  if (!waiting()) return r;
  const Clock& clock = *limits_.clock;
  const auto deadline = clock.After(timeout);
  const auto started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point spin_until;
  bool kick = false;
  {
    std::lock_guard lock(lead_mutex_);
    ++leaders_;
    spin_until = spin_.Until(started, timeout);
    kick = KickReader();
  }
  if (kick) {
    const uint64_t one = 1;
    // Only an overflowing counter fails, and the reader is then woken already.
    [[maybe_unused]] const ssize_t n = ::write(kick_fd_, &one, sizeof one);
  }
  bool backlog = false;
  while (waiting()) {
    const uint64_t pokes = inbox_.pokes();
    std::unique_lock token(read_mutex_, std::try_to_lock);
    if (!token) {
      if (timeout.count() <= 0) break;  // a look: another reads, and what it took is looked at
      const auto left = std::chrono::ceil<milliseconds>(deadline - clock.Now());
      if (left.count() <= 0) break;
      // Another reads (the reader thread, or a second caller) and pushes what it takes. Once it
      // hands the token back, what comes later lies unread until a caller takes the token: it
      // pokes the inbox then, which ends this wait (`pokes` was read before the token was tried).
      r = pop(std::min(left, milliseconds(1)), pokes);
      continue;
    }
    std::string why;  // set by a read that fails; End says the peer closed if it is not
    // The reader thread may have pushed what this caller waits for after its last look and
    // before it took the token: the socket is then empty, and only the inbox has it.
    r = pop(milliseconds(0));
    if (!waiting()) break;
    if (ended_.load()) {
      r = pop(milliseconds(0));  // the inbox is closed: it says why
      break;
    }
    while (waiting() && HasBytes()) {
      if (!ReadFrame(&why)) {
        End(why);
        break;
      }
      r = pop(milliseconds(0));
    }
    // The frame behind the one waited for is taken too when it is whole already, as a batch's
    // buffer list comes with its metadata: the receive that asks for it next finds it in the
    // inbox instead of leading a read of its own. A frame still on its way is left: this
    // caller must not wait for what it did not ask for.
    if (!waiting() && WholeMessageReady() && !ReadFrame(&why)) End(why);
    // A read that filled the stage left more in the socket, or the ring holds more than a
    // stage: the stream is ahead of us.
    const bool ring = ring_active_.load(std::memory_order_relaxed);
    backlog = backlog || (ring ? Ahead() : stage_end_ == kStageBytes);
    if (!waiting()) break;
    if (ring && socket_eof_ && !ended_.load() && !HasBytes())
      End(why);  // the ring is read to its end
    if (ended_.load()) {
      r = pop(milliseconds(0));
      break;
    }
    if (timeout.count() <= 0) break;  // a look: what had come is read
    if (std::chrono::steady_clock::now() < spin_until) {
      CpuRelax();
      continue;
    }
    if (ring && !in_ring_->ArmSleep(0)) continue;  // it came meanwhile
    pollfd p{fd_, POLLIN, 0};
    Result<int> n = clock.Poll(&p, 1, deadline);
    if (ring) {
      in_ring_->Disarm(0);
      if (n.ok() && *n > 0) DrainSocket();
    }
    if (!n.ok()) {
      r = n.status();
      break;
    }
    // The deadline (r says so); a clock's poll may also end early with nothing, to look again.
    if (*n == 0 && clock.Now() >= deadline) break;
  }
  bool resume = false;
  bool others = false;
  {
    std::lock_guard lock(lead_mutex_);
    --leaders_;
    others = leaders_ > 0;
    last_lead_ = std::chrono::steady_clock::now();
    // A wait's end is when its message came, near enough (a look's is not: it may have come
    // long before).
    if (!waiting() && timeout.count() > 0) spin_.Arrived(last_lead_);
    backlog_ = backlog;
    resume = backlog && parked_ && leaders_ == 0;
  }
  // A stream that is ahead of the caller is read best by the reader thread, on the other core,
  // while the caller decodes; one the caller waits for keeps it parked, so that a batch wakes
  // one thread, not two.
  if (resume) lead_changed_.notify_all();
  // A caller that leads beside this one may wait on the inbox for the token it held.
  if (others) inbox_.Poke();
  // The looks while it spun and slept said only "timed out"; a wait with time says for what.
  if (waiting() && timeout.count() > 0) r = Mailbox::TimedOut(what);
  return r;
}

Result<SharedBytes> ShmConnection::Receive(std::chrono::milliseconds timeout) {
  return Lead(timeout, "an untagged message",
              [this](std::chrono::milliseconds t, std::optional<uint64_t> pokes = std::nullopt) {
                return inbox_.PopUntagged(t, pokes);
              });
}

Result<TaggedMessage> ShmConnection::ReceiveTagged(uint64_t want, uint64_t mask,
                                                   std::chrono::milliseconds timeout) {
  return Lead(timeout, "a tagged message",
              [&](std::chrono::milliseconds t, std::optional<uint64_t> pokes = std::nullopt) {
                return inbox_.PopTagged(want, mask, t, pokes);
              });
}

void ShmConnection::ReadLoop() {
  std::string why = "the peer closed the connection";
  if (!Leads()) {
    while (ReadFrame(&why)) {
    }
  } else {
    while (Park()) {
      // Once the ring is in use, the server wakes this thread only if it says it sleeps.
      const bool ring = ring_active_.load();
      if (!ring || in_ring_->ArmSleep(1)) {
        pollfd p[2] = {{fd_, POLLIN, 0}, {kick_fd_, POLLIN, 0}};
        const int n = poll(p, kick_fd_ >= 0 ? 2 : 1, -1);
        if (ring) in_ring_->Disarm(1);
        if (n < 0 && errno != EINTR) break;
        if (n > 0 && (p[1].revents & POLLIN) != 0) {
          uint64_t kicks = 0;
          [[maybe_unused]] const ssize_t r = ::read(kick_fd_, &kicks, sizeof kicks);
        }
      }
      if (!Park()) break;  // a caller that took to reading meanwhile reads what came
      std::unique_lock token(read_mutex_, std::try_to_lock);
      if (!token) continue;  // a caller reads
      if (ended_.load() || !ReadReady(&why)) break;
      token.unlock();
      PokeLeaders();
    }
  }
  End(why);
}

bool ShmConnection::Park() {
  std::unique_lock lock(lead_mutex_);
  watching_ = false;
  while (!closed_.load()) {
    const auto since = std::chrono::steady_clock::now() - last_lead_;
    const bool recent = !backlog_ && since < kParked;
    if (leaders_ == 0 && !recent) {
      watching_ = true;
      return true;
    }
    parked_ = true;
    lead_changed_.wait_for(lock, leaders_ > 0 || !recent ? kParked : kParked - since);
    parked_ = false;
  }
  return false;
}

void ShmConnection::PokeLeaders() {
  {
    std::lock_guard lock(lead_mutex_);
    if (leaders_ == 0) return;
  }
  inbox_.Poke();
}

bool ShmConnection::KickReader() {
  if (!watching_ || kick_fd_ < 0) return false;
  watching_ = false;  // one kick: the reader sees the counter set until it reads it
  return true;
}

bool ShmConnection::ReadReady(std::string* why) {
  if (ring_active_.load(std::memory_order_relaxed)) DrainSocket();
  while (HasBytes()) {
    if (!ReadFrame(why)) return false;
  }
  return !socket_eof_;
}

bool ShmConnection::Readable() const {
  pollfd p{fd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

void ShmConnection::End(const std::string& why) {
  // First: whoever sees ended_ finds the inbox closed, and why.
  inbox_.Close(why.empty() ? std::string("the peer closed the connection") : why);
  ended_.store(true);
  shutdown(fd_, SHUT_RDWR);
}

bool ShmConnection::ReadFrame(std::string* why_out) {
  std::string& why = *why_out;
  FrameHeader h;
  frame_started_ = false;  // set once a byte of this frame is taken (AwaitRing, AwaitMidFrame)
  if (!ReadExactly(&h, sizeof(h), &why)) return false;
  const bool zero =
      std::all_of(std::begin(h.zero), std::end(h.zero), [](uint8_t b) { return b == 0; });
  if (!zero || h.kind < 1 || h.kind > 7) {
    why = "the peer sent a malformed frame (kind " + std::to_string(h.kind) + ")";
    return false;
  }
  if (static_cast<FrameKind>(h.kind) == FrameKind::kRing) {
    Status st = TakeRing(h);
    if (!st.ok()) {
      why = "the peer offered a bad frame ring: " + st.message();
      return false;
    }
    return true;
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
    Status st = MapRegion(h);
    if (!st.ok()) {
      why = "the peer shared a bad segment: " + st.message();
      return false;
    }
    return true;
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
  if (!ReadExactly(const_cast<uint8_t*>(bytes.data), h.length, &why)) return false;
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
  const Status st = static_cast<FrameKind>(h.kind) == FrameKind::kUntagged
                        ? inbox_.PushUntagged(std::move(bytes), wake)
                        : inbox_.PushTagged(TaggedMessage{h.tag, std::move(bytes)}, wake);
  if (!st.ok()) return false;  // closed locally
  return true;
}

bool ShmConnection::ReadExactly(void* into, size_t size, std::string* why) {
  if (ring_active_.load(std::memory_order_relaxed)) return ReadRing(into, size, why);
  auto* p = static_cast<uint8_t*>(into);
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
    if (frame_started_ && !AwaitMidFrame(why)) return false;
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
  inbox_.Wake();  // what was pushed without waking, before this read may wait
  const Clock& clock = *limits_.clock;
  const auto deadline = clock.After(limits_.timeout);
  while (in_ring_->ArmSleep(0)) {
    if (socket_eof_) {
      in_ring_->Disarm(0);
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    int n = 0;
    if (frame_started_) {
      Result<int> r = clock.Poll(&p, 1, deadline);
      n = r.ok() ? *r : -1;
      if (r.ok() && n == 0 && clock.Now() >= deadline) {
        in_ring_->Disarm(0);
        *why = StoppedMidFrame();
        return false;
      }
    } else {
      n = poll(&p, 1, -1);
    }
    in_ring_->Disarm(0);
    if (n > 0) DrainSocket();
  }
  return true;
}

bool ShmConnection::AwaitMidFrame(std::string* why) {
  inbox_.Wake();  // what was pushed without waking, before this read may wait
  const Clock& clock = *limits_.clock;
  const auto deadline = clock.After(limits_.timeout);
  pollfd p{fd_, POLLIN, 0};
  while (true) {
    Result<int> n = clock.Poll(&p, 1, deadline);
    if (!n.ok() || *n > 0) return true;  // RecvSome reads what came, or finds why not
    if (clock.Now() >= deadline) {
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

bool ShmConnection::WholeMessageReady() {
  FrameHeader h;
  uint64_t have = 0;
  if (ring_active_.load(std::memory_order_relaxed)) {
    Result<uint64_t> ready = in_ring_->Readable();
    if (!ready.ok() || *ready < sizeof(h)) return false;
    have = *ready;
    in_ring_->Peek(&h, sizeof(h));
  } else {
    have = stage_end_ - stage_begin_;
    if (stage_begin_ >= stage_end_ || have < sizeof(h)) return false;
    std::memcpy(&h, stage_.data() + stage_begin_, sizeof(h));
  }
  const auto kind = static_cast<FrameKind>(h.kind);
  if (kind != FrameKind::kUntagged && kind != FrameKind::kTagged) return false;
  return h.length <= have - sizeof(h);
}

bool ShmConnection::Ahead() const {
  Result<uint64_t> ready = in_ring_->Readable();
  return ready.ok() && *ready >= kStageBytes;
}

ssize_t ShmConnection::RecvSome(void* into, size_t size, int flags) {
  inbox_.Wake();  // what was pushed without waking, before this read may wait
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
