// The shared-memory transport's frame ring: a client's memfd that its server writes frames into.
#include "transport/shm_ring.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

#include "transport/shm_common.hpp"

namespace ferry::transport::internal::shm {

namespace {

constexpr uint64_t kRingMagic = 0x676e6972'79727266ULL;  // "ferryring", in short
// How long a producer waiting for room sleeps before it looks at its deadline and at the
// connection again: a consumer that takes bytes wakes it at once.
constexpr auto kRoomSlice = std::chrono::milliseconds(10);

template <typename T>
std::atomic_ref<T> At(T& word) {
  return std::atomic_ref<T>(word);
}

}  // namespace

// The first page. Each counter counts bytes since the ring was made; each has one writer, on
// its own cache line.
struct FrameRing::Control {
  uint64_t magic;
  uint64_t capacity;
  alignas(64) uint64_t tail;    // the producer's: bytes written
  alignas(64) uint64_t head;    // the consumer's: bytes taken
  uint32_t consumer_asleep[2];  // set by a consumer's sleeper before it sleeps on its socket
  alignas(64) uint32_t room;    // futex word, bumped when bytes are taken for a waiting producer
  uint32_t producer_waiting;
};
static_assert(sizeof(FrameRing::Control) <= 4096);

FrameRing::FrameRing(Mapping pages, uint64_t capacity)
    : pages_(std::move(pages)), mask_(capacity - 1) {}

FrameRing::Control* FrameRing::control() const { return reinterpret_cast<Control*>(pages_.data()); }

Result<FrameRing> FrameRing::Create(uint64_t capacity, int* fd) {
  if (capacity == 0 || (capacity & (capacity - 1)) != 0) {
    return Status::Invalid("a frame ring needs a power of two of bytes, not " +
                           std::to_string(capacity));
  }
  const auto length = static_cast<int64_t>(kRingControlBytes + capacity);
  FERRY_ASSIGN_OR_RAISE(Mapping pages, MakeSealedMemfd("ferry-ring", length, "a frame ring", fd));
  FrameRing ring(std::move(pages), capacity);
  ring.control()->magic = kRingMagic;
  ring.control()->capacity = capacity;
  return ring;
}

Result<FrameRing> FrameRing::Map(int fd, uint64_t length) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Status::FromErrno(errno, "fstat of the client's frame ring");
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return Status::Invalid("the client's frame ring is not sealed against shrinking");
  }
  const uint64_t capacity = length - kRingControlBytes;
  if (length <= kRingControlBytes || static_cast<uint64_t>(st.st_size) != length ||
      (capacity & (capacity - 1)) != 0 || capacity > (uint64_t{1} << 30)) {
    return Status::Invalid("the client's frame ring claims " + std::to_string(length) +
                           " bytes and holds " + std::to_string(st.st_size) +
                           " (a page and a power of two up to 1 GiB expected)");
  }
  Result<Mapping> pages =
      Mapping::OfFile(fd, static_cast<int64_t>(length), {.shared = true}, "a frame ring");
  if (!pages.ok()) return pages.status();
  FrameRing ring(std::move(*pages), capacity);
  const Control& c = *ring.control();
  if (c.magic != kRingMagic || c.capacity != capacity || At(ring.control()->tail).load() != 0 ||
      At(ring.control()->head).load() != 0) {
    return Status::Invalid("the client's frame ring is not a fresh ring of " +
                           std::to_string(capacity) + " bytes");
  }
  return ring;
}

Result<uint64_t> FrameRing::Readable() const {
  const uint64_t tail = At(control()->tail).load(std::memory_order_acquire);
  const uint64_t ready = tail - position_;
  if (ready > mask_ + 1) {
    return Status::Invalid("the server's frame ring is corrupt: written to " +
                           std::to_string(tail) + ", taken to " + std::to_string(position_) +
                           ", in a ring of " + std::to_string(mask_ + 1) + " bytes");
  }
  return ready;
}

void FrameRing::Peek(void* into, uint64_t size) const { PeekAt(0, into, size); }

void FrameRing::PeekAt(uint64_t skip, void* into, uint64_t size) const {
  const uint64_t at = (position_ + skip) & mask_;
  const uint64_t first = std::min(size, mask_ + 1 - at);
  std::memcpy(into, data() + at, first);
  std::memcpy(static_cast<uint8_t*>(into) + first, data(), size - first);
}

void FrameRing::Take(void* into, uint64_t size) { TakeAfter(0, into, size); }

void FrameRing::TakeAfter(uint64_t skip, void* into, uint64_t size) {
  PeekAt(skip, into, size);
  position_ += skip + size;
  Control& c = *control();
  At(c.head).store(position_, std::memory_order_seq_cst);
  // Paired with the producer's mark then look: one of the two sees the other. A waiting
  // producer is woken once half the ring is free, not for every frame taken: a server far
  // ahead of its client would otherwise wake for each frame, and each wake-up costs both.
  if (At(c.producer_waiting).load(std::memory_order_seq_cst) != 0 &&
      At(c.tail).load(std::memory_order_relaxed) - position_ <= (mask_ + 1) / 2 &&
      At(c.producer_waiting).exchange(0) != 0) {
    At(c.room).fetch_add(1);
    syscall(SYS_futex, &c.room, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
}

bool FrameRing::ArmSleep(int who) {
  Control& c = *control();
  At(c.consumer_asleep[who]).store(1, std::memory_order_seq_cst);
  if (At(c.tail).load(std::memory_order_seq_cst) == At(c.head).load(std::memory_order_seq_cst)) {
    return true;
  }
  At(c.consumer_asleep[who]).store(0, std::memory_order_relaxed);
  return false;
}

void FrameRing::Disarm(int who) {
  At(control()->consumer_asleep[who]).store(0, std::memory_order_relaxed);
}

Result<uint64_t> FrameRing::Room() const {
  const uint64_t head = At(control()->head).load(std::memory_order_acquire);
  const uint64_t used = position_ - head;
  if (head > position_ || used > mask_ + 1) {
    return Status::Invalid("the client's frame ring is corrupt: taken to " + std::to_string(head) +
                           ", written to " + std::to_string(position_) + ", in a ring of " +
                           std::to_string(mask_ + 1) + " bytes");
  }
  return mask_ + 1 - used;
}

bool FrameRing::Publish() {
  Control& c = *control();
  At(c.tail).store(position_, std::memory_order_seq_cst);
  // Paired with the consumer's mark then look (ArmSleep).
  bool wake = false;
  for (uint32_t& asleep : c.consumer_asleep) {
    wake = (At(asleep).load(std::memory_order_seq_cst) != 0 && At(asleep).exchange(0) != 0) || wake;
  }
  return wake;
}

Status FrameRing::Write(std::span<const iovec> iov, const Clock& clock,
                        std::chrono::milliseconds timeout, const std::function<Status()>& doorbell,
                        const std::function<bool()>& closed) {
  Control& c = *control();
  // Room known to be free: the consumer only ever adds to it, so it is looked at again only
  // once it is used up.
  uint64_t room = 0;
  for (const iovec& v : iov) {
    const auto* from = static_cast<const uint8_t*>(v.iov_base);
    uint64_t left = v.iov_len;
    while (left > 0) {
      if (room == 0) {
        FERRY_ASSIGN_OR_RAISE(room, Room());
      }
      if (room == 0) {
        if (Publish()) FERRY_RETURN_NOT_OK(doorbell());
        // The peer has `timeout` to take something, from when the ring filled.
        const Clock::time_point deadline = clock.After(timeout);
        while (room == 0) {
          const uint32_t seen = At(c.room).load();
          At(c.producer_waiting).store(1, std::memory_order_seq_cst);
          FERRY_ASSIGN_OR_RAISE(room, Room());
          if (room > 0) break;
          if (closed()) return Status::Unavailable("the connection is closed (the peer went away)");
          if (clock.Now() >= deadline) {
            return Status::DeadlineExceeded("the peer took nothing for " +
                                            std::to_string(timeout.count()) + " ms (stopped?)");
          }
          const timespec slice{0, std::chrono::nanoseconds(kRoomSlice).count()};
          syscall(SYS_futex, &c.room, FUTEX_WAIT, seen, &slice, nullptr, 0);
          FERRY_ASSIGN_OR_RAISE(room, Room());
        }
        // Room came without the consumer's wake (it took less than half the ring): the mark
        // would cost it a futex wake later for a producer that no longer waits.
        At(c.producer_waiting).store(0, std::memory_order_relaxed);
      }
      const uint64_t n = std::min(room, left);
      const uint64_t at = position_ & mask_;
      const uint64_t first = std::min(n, mask_ + 1 - at);
      std::memcpy(data() + at, from, first);
      std::memcpy(data(), from + first, n - first);
      position_ += n;
      room -= n;
      from += n;
      left -= n;
    }
  }
  if (Publish()) return doorbell();
  return Status::OK();
}

}  // namespace ferry::transport::internal::shm
