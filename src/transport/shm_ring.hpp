// Internal to the shared-memory transport: the ring a client makes for its server's frames. The
// server writes its frames into the ring instead of the socket, so that while the client is
// awake a frame costs neither process a system call; the socket still carries descriptors,
// wake-ups of a client that sleeps, and the hang-up.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <span>

#include "ferry/core/clock.hpp"
#include "ferry/core/mapping.hpp"
#include "ferry/core/result.hpp"

namespace ferry::transport::internal::shm {

/// The bytes of ring a client offers: a server's frames up to this far ahead of the client,
/// as a socket's buffer would hold.
constexpr uint64_t kRingBytes = uint64_t{256} << 10;
/// The page of counters before a ring's bytes.
constexpr uint64_t kRingControlBytes = 4096;

/// A single-producer, single-consumer ring of bytes in a sealed memfd: one page of counters,
/// then a power of two of data. Both ends map it read-write; each checks what the other wrote
/// before trusting it. Move-only; owns its mapping. The caller serialises each end's calls (the
/// producer under its send lock, the consumer under its read token).
class FrameRing {
 public:
  /// Client side: a fresh ring of `capacity` data bytes (a power of two) and its descriptor,
  /// sealed against shrinking and growing, for the caller to pass and then close.
  static Result<FrameRing> Create(uint64_t capacity, int* fd);
  /// Server side: map the ring a client passed as `fd` (`length` bytes, as its frame said).
  /// Refused, with what was wrong, unless it is sealed against shrinking, exactly that long,
  /// and fresh (both counters 0).
  static Result<FrameRing> Map(int fd, uint64_t length);

  FrameRing(FrameRing&&) noexcept = default;
  FrameRing& operator=(FrameRing&&) noexcept = default;

  /// The bytes the ring's memfd holds, counter page included: the length a client's offer
  /// names and Map expects.
  uint64_t mapped_bytes() const { return static_cast<uint64_t>(pages_.size()); }

  // The consumer's side.

  /// Bytes written and not yet taken; an error naming both counters if the producer's count
  /// is impossible.
  Result<uint64_t> Readable() const;
  /// Copy the next `size` bytes (at most Readable()) into `into`, hand their room back, and
  /// wake a producer waiting for room once half the ring is free.
  void Take(void* into, uint64_t size);
  /// Copy the next `size` bytes (at most Readable()) into `into` and leave them in the ring: a
  /// look at a frame's header before deciding to read it. Costs one copy of `size` bytes.
  void Peek(void* into, uint64_t size) const;
  /// Copy `size` bytes from `skip` bytes past the next (`skip + size` at most Readable()) into
  /// `into`, and hand back the room of all `skip + size`: a frame whose header was Peeked is
  /// taken whole by one hand-back (one fence) instead of two.
  void TakeAfter(uint64_t skip, void* into, uint64_t size);
  /// Say that sleeper `who` (0: the reader holding the read token, 1: a reader thread that
  /// waits for callers to stop reading) is about to sleep until the socket is readable: true if
  /// it may (nothing is unread), false if something is (the mark is then withdrawn). Safe from
  /// any thread: it reads only the shared counters.
  bool ArmSleep(int who);
  /// Withdraw sleeper `who`'s mark after a sleep.
  void Disarm(int who);

  // The producer's side.

  /// Append `iov`'s bytes, then publish them. While the ring is full it publishes what it has,
  /// calls `doorbell` if the consumer sleeps, and waits for room on the ring's futex, 10 ms at
  /// a time: kDeadlineExceeded if the consumer takes nothing for `timeout` by `clock`,
  /// kUnavailable once `closed()` says the connection is gone. `doorbell` is called once more
  /// at the end if the consumer sleeps.
  [[nodiscard]] Status Write(std::span<const iovec> iov, const Clock& clock,
                             std::chrono::milliseconds timeout,
                             const std::function<Status()>& doorbell,
                             const std::function<bool()>& closed);

  /// The first page's counters (shm_ring.cpp).
  struct Control;

 private:
  FrameRing(Mapping pages, uint64_t capacity);
  Control* control() const;
  uint8_t* data() const { return pages_.data() + kRingControlBytes; }
  Result<uint64_t> Room() const;
  // Publish the bytes put so far: true if the consumer sleeps and must be woken.
  bool Publish();
  // Peek, from `skip` bytes past the next.
  void PeekAt(uint64_t skip, void* into, uint64_t size) const;

  Mapping pages_;
  uint64_t mask_ = 0;
  uint64_t position_ = 0;  // this end's own counter: tail (producer) or head (consumer)
};

}  // namespace ferry::transport::internal::shm
