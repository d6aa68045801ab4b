// The shared-memory transport's connection, reading: who reads, the reader thread or a waiting
// caller (Lead), and how they hand the read token to each other. The frames themselves are read
// in shm_frame_reading.cpp.
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

// Sets `*slot` to `value` for its scope, then back to NULL.
template <typename T>
class ClearOnExit {
 public:
  ClearOnExit(T** slot, T* value) : slot_(slot) { *slot_ = value; }
  ~ClearOnExit() { *slot_ = nullptr; }
  ClearOnExit(const ClearOnExit&) = delete;
  ClearOnExit& operator=(const ClearOnExit&) = delete;

 private:
  T** slot_;
};

// Sets a flag for its scope, then clears it.
template <>
class ClearOnExit<bool> {
 public:
  explicit ClearOnExit(bool* flag) : flag_(flag) { *flag_ = true; }
  ~ClearOnExit() { *flag_ = false; }
  ClearOnExit(const ClearOnExit&) = delete;
  ClearOnExit& operator=(const ClearOnExit&) = delete;

 private:
  bool* flag_;
};

}  // namespace

template <typename Pop>
auto ShmConnection::Lead(std::chrono::milliseconds timeout, const char* what, Claim* claim, Pop pop)
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
    // Declared after the token: it withdraws the claim before the token is handed back.
    const ClearOnExit<Claim> claiming(&claim_, claim);
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
    // The frames behind the one waited for are taken too while they are whole already, up to
    // the first tagged one (two at most): a batch's buffer list comes with its metadata, and a
    // metadata message taken behind a buffer list brings its own list along, so that the
    // receives that ask for them next find them in the inbox instead of leading reads of their
    // own. (Taken alone, a metadata message would leave its list to a read of its own, which
    // would take the next metadata alone: a stream ahead of its caller would stay a frame off,
    // a read each batch.) A frame still on its way is left: this caller must not wait for what
    // it did not ask for.
    for (int behind = 0; behind < 2 && !waiting(); ++behind) {
      const std::optional<FrameKind> next = WholeMessageReady();
      if (!next) break;
      if (!ReadFrame(&why)) {
        End(why);
        break;
      }
      if (*next == FrameKind::kTagged) break;
    }
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
  Claim claim;
  return Lead(timeout, "an untagged message", &claim,
              [&](std::chrono::milliseconds t,
                  std::optional<uint64_t> pokes = std::nullopt) -> Result<SharedBytes> {
                if (claim.filled && !claim.taken) {
                  claim.taken = true;
                  return std::move(claim.message.payload);
                }
                return inbox_.PopUntagged(t, pokes);
              });
}

Result<TaggedMessage> ShmConnection::ReceiveTagged(uint64_t want, uint64_t mask,
                                                   std::chrono::milliseconds timeout) {
  Claim claim;
  claim.untagged = false;
  claim.want = want;
  claim.mask = mask;
  return Lead(timeout, "a tagged message", &claim,
              [&](std::chrono::milliseconds t,
                  std::optional<uint64_t> pokes = std::nullopt) -> Result<TaggedMessage> {
                if (claim.filled && !claim.taken) {
                  claim.taken = true;
                  return std::move(claim.message);
                }
                return inbox_.PopTagged(want, mask, t, pokes);
              });
}

Result<MessageAndBody> ShmConnection::ReceiveMessageAndBody(uint64_t want, uint64_t mask,
                                                            std::chrono::milliseconds timeout) {
  Claim claim;
  // A reader thread ahead of the caller pushed the body with its metadata: both are popped at
  // once. A receive that leads a read takes the body's frame after its metadata, when it is
  // whole already (Lead), so that one is looked for in the inbox after the lead. A body still
  // on its way is left to ReceiveTagged, which leads a read of its own.
  FERRY_ASSIGN_OR_RAISE(
      MessageAndBody out,
      Lead(timeout, "an untagged message", &claim,
           [&](std::chrono::milliseconds t,
               std::optional<uint64_t> pokes = std::nullopt) -> Result<MessageAndBody> {
             if (claim.filled && !claim.taken) {
               claim.taken = true;
               return MessageAndBody{std::move(claim.message.payload), std::nullopt};
             }
             return inbox_.PopMessageAndBody(want, mask, t, pokes);
           }));
  if (!out.body) {
    Result<TaggedMessage> body = inbox_.PopTagged(want, mask, std::chrono::milliseconds(0));
    if (body.ok()) out.body = std::move(*body);
  }
  return out;
}

void ShmConnection::ReadLoop() {
  std::string why = "the peer closed the connection";
  // The read-ahead's patience is this thread's own pacing, as Park's wait is: on the real clock,
  // so that a peer's sends complete whatever clock times this end's receives.
  const std::shared_ptr<Clock> real = Clock::Real();
  if (!Leads()) {
    while (ReadFrame(&why)) {
    }
  } else {
    while (Park()) {
      // Once the ring is in use, the server wakes this thread only if it says it sleeps.
      const bool ring = ring_active_.load();
      // Before the ring, frames this thread read into the stage and left there (its read stopped
      // at the read-ahead limit) are on the socket no more: sleeping on it would leave them
      // unread, the ring's start among them, while the server waits for room in the ring.
      bool staged = false;
      if (!ring) {
        std::unique_lock token(read_mutex_, std::try_to_lock);
        staged = token && stage_begin_ < stage_end_;
        if (token) {
          token.unlock();
          // A caller that found the token taken meanwhile waits on the inbox until it is
          // handed back: told, as after a read (by the clock alone it would wait its slice).
          PokeLeaders();
        }
      }
      if (!staged && (!ring || in_ring_->ArmSleep(1))) {
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
      // Ahead of the callers by its limit: the rest waits in the ring (or the socket) until they
      // have taken half of what this thread holds for them. Callers that take too little
      // meanwhile (a consumer busy elsewhere) have the rest read for them, up to the inbox's
      // limit, so that their peer, whose sends wait meanwhile, does not take them for stopped.
      if (!past_read_ahead_ && inbox_.held_bytes() > kReadAheadBytes) {
        past_read_ahead_ = !inbox_.WaitBelow(kReadAheadBytes / 2, kReadAheadPatience, *real);
      }
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
  const ClearOnExit<bool> staging(&staging_);
  while (HasBytes()) {
    if (inbox_.held_bytes() + staged_bytes_ <= kReadAheadBytes) {
      past_read_ahead_ = false;
    } else if (!past_read_ahead_) {
      break;  // ReadLoop waits for the callers to take
    }
    if (!ReadFrame(why)) {
      (void)PushStaged(false);  // what came before the bad frame is the callers' still
      return false;
    }
  }
  // Frames left staged did not empty the ring (that frame wakes): no wake, as before.
  return PushStaged(false) && !socket_eof_;
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

}  // namespace ferry::transport::internal::shm
