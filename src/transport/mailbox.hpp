// A connection end's inbox: untagged messages in order, tagged messages matched by tag and mask,
// blocking receives with timeouts by the end's clock, and close semantics shared by every
// transport.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/core/clock.hpp"
#include "ferry/transport/transport.hpp"
#include "transport/fifo_queue.hpp"

namespace ferry::transport::internal {

/// `limits` with its clock set: Clock::Real() where the caller left it NULL. Every transport end
/// keeps its limits so, and times its waits by that clock.
inline TransportLimits WithClock(TransportLimits limits) {
  if (limits.clock == nullptr) limits.clock = Clock::Real();
  return limits;
}

/// Messages delivered to one end. Producers push; receivers pop, waiting up to a timeout by the
/// mailbox's clock. Once closed, pushes fail with EPIPE and pops drain what is queued, then fail
/// with the close reason. With a byte limit, a push waits while the queue holds more than the
/// limit (and at least one message), which is how a slow consumer holds back its transport's
/// reader and, through the socket, the sender; that wait has no deadline (a pop or the close
/// ends it), but is one on the clock, so a test sees it. With a spin, a pop that finds nothing
/// first watches the box for up to that long on the CPU, then sleeps (TransportLimits::spin).
/// Thread-safe.
class Mailbox {
 public:
  /// A mailbox holding up to `max_bytes` (0: no limit), whose waits are timed by `clock` (NULL:
  /// Clock::Real()), and whose pops spin up to `spin` before they sleep.
  explicit Mailbox(int64_t max_bytes = 0, std::shared_ptr<Clock> clock = nullptr,
                   std::chrono::microseconds spin = std::chrono::microseconds(0))
      : clock_(clock != nullptr ? std::move(clock) : Clock::Real()),
        max_bytes_(max_bytes),
        spin_(spin) {}

  /// Queue a message. Without `wake` the receivers are not woken yet (a pusher with more to push
  /// at once wakes them once, by Wake or a later push that wakes): a receiver woken for the first
  /// of two messages that travel together would find the second not there yet.
  [[nodiscard]] Status PushUntagged(SharedBytes message, bool wake = true) {
    const int64_t size = message.size;
    return Push(
        size, [&] { untagged_.push_back(std::move(message)); }, wake);
  }

  [[nodiscard]] Status PushTagged(TaggedMessage message, bool wake = true) {
    const int64_t size = message.payload.size;
    return Push(
        size, [&] { tagged_.push_back(std::move(message)); }, wake);
  }

  /// A message for PushAll: untagged (its tag unused) or tagged.
  struct Pushed {
    bool untagged = true;
    TaggedMessage message;
  };

  /// Queue `messages` in their order, as a PushUntagged or PushTagged each would, under one hold
  /// of the lock (a reader that reads many frames at once takes the lock once for them, not once
  /// a frame beside a receiver that pops). `wake` as for one push. Empties `messages`.
  [[nodiscard]] Status PushAll(std::vector<Pushed>* messages, bool wake) {
    int64_t size = 0;
    for (const Pushed& m : *messages) size += m.message.payload.size;
    const Status st = Push(
        size,
        [&] {
          for (Pushed& m : *messages) {
            if (m.untagged) {
              untagged_.push_back(std::move(m.message.payload));
            } else {
              tagged_.push_back(std::move(m.message));
            }
          }
        },
        wake);
    messages->clear();
    return st;
  }

  /// Wake the receivers for what was pushed without waking them (nothing if there is none).
  void Wake() {
    {
      std::lock_guard lock(mutex_);
      if (!unwoken_) return;
      unwoken_ = false;
    }
    changed_.notify_all();
  }

  /// The Pokes so far: read before a wait that a Poke must end.
  uint64_t pokes() const { return pokes_.load(std::memory_order_acquire); }

  /// End, with nothing, the waits of the pops given a count of pokes older than this one's: a
  /// receiver that waits while another thread fetches its messages learns that it stopped.
  void Poke() {
    {
      std::lock_guard lock(mutex_);
      pokes_.fetch_add(1, std::memory_order_release);
      changes_.fetch_add(1, std::memory_order_release);
    }
    changed_.notify_all();
  }

  /// The oldest untagged message, waiting up to `timeout`; a wait also ends once the count of
  /// pokes differs from `pokes` where given (kDeadlineExceeded "timed out" then, as for a look).
  Result<SharedBytes> PopUntagged(std::chrono::milliseconds timeout,
                                  std::optional<uint64_t> pokes = std::nullopt) {
    std::unique_lock lock(mutex_);
    const bool ready = AwaitUntagged(lock, timeout, pokes);
    if (!untagged_.empty()) {
      SharedBytes m = std::move(untagged_.front());
      untagged_.pop_front();
      Taken(m.size);
      return m;
    }
    return Failure(ready, timeout, pokes, "an untagged message");
  }

  /// The oldest untagged message, as PopUntagged, and with it, under the same hold of the lock,
  /// the oldest tagged message that `want` and `mask` match if one is queued already (a batch's
  /// metadata and its body's list, which a reader ahead of its receiver pushed together: one
  /// lock a batch instead of two).
  Result<MessageAndBody> PopMessageAndBody(uint64_t want, uint64_t mask,
                                           std::chrono::milliseconds timeout,
                                           std::optional<uint64_t> pokes = std::nullopt) {
    std::unique_lock lock(mutex_);
    const bool ready = AwaitUntagged(lock, timeout, pokes);
    if (untagged_.empty()) return Failure(ready, timeout, pokes, "an untagged message");
    MessageAndBody out{std::move(untagged_.front()), std::nullopt};
    untagged_.pop_front();
    int64_t taken = out.message.size;
    if (auto it = Find(want, mask); it != tagged_.end()) {
      out.body = std::move(*it);
      tagged_.erase(it);
      taken += out.body->payload.size;
    }
    Taken(taken);
    return out;
  }

  /// The oldest tagged message whose `(tag & mask) == (want & mask)`; `pokes` as for PopUntagged.
  Result<TaggedMessage> PopTagged(uint64_t want, uint64_t mask, std::chrono::milliseconds timeout,
                                  std::optional<uint64_t> pokes = std::nullopt) {
    std::unique_lock lock(mutex_);
    bool ready = true;
    auto it = Find(want, mask);
    if (it == tagged_.end()) {  // as for an untagged message
      // One capture besides `this`: the predicate must fit std::function's own room (Clock::
      // WaitFor takes one), or every wait would allocate.
      const Wanted w{want, mask, pokes};
      const auto done = [this, &w] {
        return Find(w.tag, w.mask) != tagged_.end() || closed_ || Poked(w.pokes);
      };
      SpinFor(lock, timeout, done);
      ready = clock_->WaitFor(changed_, lock, timeout, done);
      it = Find(want, mask);
    }
    if (it != tagged_.end()) {
      TaggedMessage m = std::move(*it);
      tagged_.erase(it);
      Taken(m.payload.size);
      return m;
    }
    return Failure(ready, timeout, pokes, "a tagged message");
  }

  /// The payload bytes queued now, read without the lock (it may be stale by the time it is
  /// used): what a reader that reads ahead checks before it takes another frame.
  int64_t held_bytes() const { return held_bytes_.load(std::memory_order_relaxed); }

  /// Wait up to `patience` until the queue holds at most `bytes` (or nothing), or the box is
  /// closed: a reader thread that reads ahead of its receivers waits here between frames, so
  /// that what it holds stays small, and in cache. The pop that brings the queue down to
  /// `bytes` wakes it, once. False if `patience` ran out first, by `clock` (not the box's: a
  /// reader paces itself on the real clock, whatever its receivers' timeouts are measured by):
  /// the receivers took too little meanwhile.
  bool WaitBelow(int64_t bytes, std::chrono::milliseconds patience, const Clock& clock) {
    std::unique_lock lock(mutex_);
    const auto below = [&] {
      return closed_ || bytes_ <= bytes || (untagged_.empty() && tagged_.empty());
    };
    if (below()) return true;
    if (unwoken_) {  // about to wait for the receivers to take: they must know there is some
      unwoken_ = false;
      changed_.notify_all();
    }
    below_bytes_ = bytes;
    ++below_waiters_;
    const bool came = clock.WaitFor(room_, lock, patience, below);
    --below_waiters_;
    return came;
  }

  /// Whether a tagged message with exactly `tag` waits here: a look under the lock, no wait.
  bool HoldsTagged(uint64_t tag) const {
    std::lock_guard lock(mutex_);
    return std::any_of(tagged_.begin(), tagged_.end(),
                       [&](const TaggedMessage& m) { return m.tag == tag; });
  }

  /// Refuse further pushes and wake every waiter; `reason` is what pops report once drained.
  void Close(std::string reason = "the peer closed the connection") {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      closed_ = true;
      reason_ = std::move(reason);
      changes_.fetch_add(1, std::memory_order_release);
    }
    changed_.notify_all();
    room_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

  /// The error of a pop that waited for `what` ("an untagged message") until its deadline. A
  /// pop that only looked (no time to wait) says just "timed out", which allocates nothing.
  static Status TimedOut(const char* what) {
    return Status::DeadlineExceeded(std::string("timed out waiting for ") + what);
  }

 private:
  template <typename F>
  Status Push(int64_t size, F&& push, bool wake) {
    {
      std::unique_lock lock(mutex_);
      if (max_bytes_ > 0) {
        const auto room = [&] {
          return closed_ || bytes_ <= max_bytes_ || (untagged_.empty() && tagged_.empty());
        };
        if (unwoken_ && !room()) {
          // About to wait for the receivers to take: they must know there is something.
          unwoken_ = false;
          changed_.notify_all();
        }
        // No deadline: a manual clock's backstop only ends one round of the wait.
        ++room_waiters_;
        while (!clock_->WaitUntil(room_, lock, Clock::time_point::max(), room)) {
        }
        --room_waiters_;
      }
      if (closed_) return Status::Unavailable("the connection is closed");
      push();
      changes_.fetch_add(1, std::memory_order_release);
      bytes_ += size;
      held_bytes_.store(bytes_, std::memory_order_relaxed);
      unwoken_ = !wake;
      if (!wake) return Status::OK();
    }
    changed_.notify_all();
    return Status::OK();
  }

  // With the lock held: what an untagged pop waits for, up to `timeout` (spinning first), unless
  // one is queued already (then no wait is set up). False if the wait ended by its timeout.
  bool AwaitUntagged(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout,
                     const std::optional<uint64_t>& pokes) {
    if (!untagged_.empty()) return true;
    const auto done = [this, &pokes] { return !untagged_.empty() || closed_ || Poked(pokes); };
    SpinFor(lock, timeout, done);
    return clock_->WaitFor(changed_, lock, timeout, done);
  }

  // With the lock held: unless ready() holds or the pop may not wait, watch the box for up to
  // spin_ (at most `timeout`) without the lock,
  // looking again each time something was pushed, and return (locked) when ready() holds or the
  // spin is spent. Watching a counter, not the lock, leaves the pusher's path as it is: a push
  // does not wake a spinner (there is no futex to wake), it only bumps the counter.
  template <typename Ready>
  void SpinFor(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout, Ready ready) {
    if (spin_.count() <= 0 || timeout.count() <= 0 || ready()) return;
    const auto until =
        std::chrono::steady_clock::now() + std::min<std::chrono::microseconds>(spin_, timeout);
    uint64_t seen = changes_.load(std::memory_order_acquire);
    lock.unlock();
    while (true) {
      bool changed = false;
      for (int i = 0; i < 64 && !changed; ++i) {
        changed = changes_.load(std::memory_order_acquire) != seen;
        if (!changed) CpuRelax();
      }
      if (changed) {
        lock.lock();
        if (ready()) return;
        seen = changes_.load(std::memory_order_acquire);
        lock.unlock();
      }
      if (std::chrono::steady_clock::now() >= until) break;
    }
    lock.lock();
  }

  static void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  // Called with the lock held when a message leaves the queue.
  void Taken(int64_t size) {
    bytes_ -= size;
    held_bytes_.store(bytes_, std::memory_order_relaxed);
    if (room_waiters_ > 0 || (below_waiters_ > 0 && bytes_ <= below_bytes_)) room_.notify_all();
  }

  // What a tagged pop waits for.
  struct Wanted {
    uint64_t tag;
    uint64_t mask;
    std::optional<uint64_t> pokes;
  };

  // With the lock held: the oldest tagged message that `want` and `mask` match.
  FifoQueue<TaggedMessage>::iterator Find(uint64_t want, uint64_t mask) {
    for (auto it = tagged_.begin(); it != tagged_.end(); ++it) {
      if ((it->tag & mask) == (want & mask)) return it;
    }
    return tagged_.end();
  }

  bool Poked(std::optional<uint64_t> pokes) const {
    return pokes.has_value() && pokes_.load(std::memory_order_relaxed) != *pokes;
  }

  // `ready`: the wait ended before its timeout (closed, or poked).
  Status Failure(bool ready, std::chrono::milliseconds timeout, std::optional<uint64_t> pokes,
                 const char* what) const {
    if (ready && closed_) return Status::Unavailable(reason_ + " while waiting for " + what);
    // A look (no wait) that finds nothing is how a spinning reader polls, and a poked wait how a
    // leading caller learns to read on: their status is a fixed one, so that neither allocates.
    if (timeout.count() <= 0 || Poked(pokes)) {
      static const FixedStatus kLookedInVain(StatusCode::kDeadlineExceeded, "timed out");
      return kLookedInVain.status();
    }
    return TimedOut(what);
  }

  const std::shared_ptr<Clock> clock_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::condition_variable room_;
  FifoQueue<SharedBytes> untagged_;
  FifoQueue<TaggedMessage> tagged_;
  bool closed_ = false;
  std::string reason_;
  const int64_t max_bytes_;
  int64_t bytes_ = 0;
  int room_waiters_ = 0;     // pushes waiting for room (under mutex_)
  int below_waiters_ = 0;    // readers in WaitBelow (under mutex_)
  int64_t below_bytes_ = 0;  // what they wait for the queue to come down to (under mutex_)
  std::atomic<int64_t> held_bytes_{0};  // bytes_, for looks without the lock
  bool unwoken_ = false;                // pushed without waking the receivers
  const std::chrono::microseconds spin_;
  std::atomic<uint64_t> changes_{0};  // pushes, pokes and the close: what a spinning pop watches
  std::atomic<uint64_t> pokes_{0};    // Pokes so far (written under mutex_)
};

}  // namespace ferry::transport::internal
