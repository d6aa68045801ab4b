// The shared-memory transport's frame ring: bytes cross its wrap intact, a sleeping consumer is
// woken once, a producer facing a full ring waits for room and fails at its timeout or when the
// connection goes, and a ring that is unsealed, not fresh, or whose counters lie is refused with
// what was wrong.
#include "transport/shm_ring.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <future>
#include <numeric>
#include <vector>

#include "support/test_util.hpp"

namespace ferry::transport::internal::shm {
namespace {

using namespace std::chrono_literals;

// A consumer's ring and the producer's mapping of it, as a client and its server hold them.
struct Ends {
  FrameRing consumer;
  FrameRing producer;
  int fd;
};

Result<Ends> MakeEnds(uint64_t capacity) {
  int fd = -1;
  FERRY_ASSIGN_OR_RAISE(FrameRing consumer, FrameRing::Create(capacity, &fd));
  Result<FrameRing> producer = FrameRing::Map(fd, kRingControlBytes + capacity);
  if (!producer.ok()) {
    close(fd);
    return producer.status();
  }
  return Ends{std::move(consumer), std::move(*producer), fd};
}

std::vector<uint8_t> Counting(size_t size, uint8_t from) {
  std::vector<uint8_t> v(size);
  std::iota(v.begin(), v.end(), from);
  return v;
}

// Write `bytes` with a doorbell that counts its rings and a connection that never closes.
Status Write(
    FrameRing& ring, const std::vector<uint8_t>& bytes, int* rings,
    std::chrono::milliseconds timeout = 10s, const Clock& clock = *Clock::Real(),
    const std::function<bool()>& closed = [] { return false; }) {
  const iovec v{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  return ring.Write(
      {&v, 1}, clock, timeout,
      [rings] {
        ++*rings;
        return Status::OK();
      },
      closed);
}

std::vector<uint8_t> Take(FrameRing& ring, size_t size) {
  std::vector<uint8_t> out(size);
  ring.Take(out.data(), size);
  return out;
}

TEST(FrameRing, BytesCrossTheWrapIntact) {
  ASSERT_OK_AND_ASSIGN(Ends e, MakeEnds(4096));
  int rings = 0;
  for (uint8_t round = 0; round < 5; ++round) {
    // 3,000 bytes a round: every round after the first crosses the end of the ring.
    const std::vector<uint8_t> sent = Counting(3000, round);
    ASSERT_OK(Write(e.producer, sent, &rings));
    ASSERT_OK_AND_ASSIGN(uint64_t ready, e.consumer.Readable());
    ASSERT_EQ(ready, 3000);
    EXPECT_EQ(Take(e.consumer, 1000), std::vector<uint8_t>(sent.begin(), sent.begin() + 1000));
    EXPECT_EQ(Take(e.consumer, 2000), std::vector<uint8_t>(sent.begin() + 1000, sent.end()));
  }
  EXPECT_EQ(rings, 0);  // the consumer never slept
  close(e.fd);
}

TEST(FrameRing, ASleepingConsumerIsWokenOnceAndOnlyIfItHasNothing) {
  ASSERT_OK_AND_ASSIGN(Ends e, MakeEnds(4096));
  int rings = 0;
  ASSERT_TRUE(e.consumer.ArmSleep(0));
  ASSERT_OK(Write(e.producer, Counting(10, 0), &rings));
  EXPECT_EQ(rings, 1);
  ASSERT_OK(Write(e.producer, Counting(10, 0), &rings));
  EXPECT_EQ(rings, 1);  // the mark was spent: the consumer is awake
  // With bytes unread, a sleeper may not sleep, from either of its two places.
  EXPECT_FALSE(e.consumer.ArmSleep(0));
  EXPECT_FALSE(e.consumer.ArmSleep(1));
  ASSERT_OK(Write(e.producer, Counting(10, 0), &rings));
  EXPECT_EQ(rings, 1);
  Take(e.consumer, 30);
  ASSERT_TRUE(e.consumer.ArmSleep(1));
  ASSERT_OK(Write(e.producer, Counting(10, 0), &rings));
  EXPECT_EQ(rings, 2);
  close(e.fd);
}

TEST(FrameRing, AProducerWaitsForHalfTheRingThenGoesOn) {
  ASSERT_OK_AND_ASSIGN(Ends e, MakeEnds(4096));
  int rings = 0;
  ASSERT_OK(Write(e.producer, Counting(4096, 0), &rings));
  // 1,000 bytes more wait for room; the clock is real and the timeout long, so only the
  // consumer's taking lets the write finish.
  const std::vector<uint8_t> more = Counting(1000, 7);
  auto written = std::async(std::launch::async, [&] { return Write(e.producer, more, &rings); });
  EXPECT_EQ(written.wait_for(50ms), std::future_status::timeout);
  Take(e.consumer, 4096);
  ASSERT_EQ(written.wait_for(10s), std::future_status::ready) << "the producer was never woken";
  ASSERT_OK(written.get());
  EXPECT_EQ(Take(e.consumer, 1000), more);
  close(e.fd);
}

TEST(FrameRing, AProducerThatFoundRoomUnwokenWithdrawsItsMark) {
  ASSERT_OK_AND_ASSIGN(Ends e, MakeEnds(4096));
  EXPECT_EQ(e.consumer.mapped_bytes(), kRingControlBytes + 4096);
  int rings = 0;
  ASSERT_OK(Write(e.producer, Counting(4096, 0), &rings));
  const std::vector<uint8_t> more = Counting(1000, 7);
  auto written = std::async(std::launch::async, [&] { return Write(e.producer, more, &rings); });
  void* page = mmap(nullptr, kRingControlBytes, PROT_READ, MAP_SHARED, e.fd, 0);
  ASSERT_NE(page, MAP_FAILED);
  const auto* waiting = reinterpret_cast<const uint32_t*>(static_cast<uint8_t*>(page) + 196);
  ASSERT_TRUE(testing::Within(10s, [&] { return std::atomic_ref(*waiting).load() == 1; }));
  // Taking 1,000 bytes leaves more than half the ring full: no wake-up, so the producer finds
  // the room at the end of its 10 ms slice, and must take its mark back itself.
  const std::vector<uint8_t> first = Take(e.consumer, 1000);
  ASSERT_EQ(written.wait_for(10s), std::future_status::ready) << "the producer never looked again";
  ASSERT_OK(written.get());
  EXPECT_EQ(std::atomic_ref(*waiting).load(), 0u) << "the mark outlived the wait";
  munmap(page, kRingControlBytes);
  EXPECT_EQ(first, Counting(1000, 0));
  close(e.fd);
}

TEST(FrameRing, AProducerFacingAFullRingFailsAtItsTimeoutOrWhenTheConnectionGoes) {
  ASSERT_OK_AND_ASSIGN(Ends e, MakeEnds(4096));
  int rings = 0;
  ASSERT_OK(Write(e.producer, Counting(4096, 0), &rings));
  ManualClock clock;
  auto written = std::async(std::launch::async,
                            [&] { return Write(e.producer, Counting(1, 0), &rings, 30s, clock); });
  // The producer's mark (shm_ring.cpp: the word at byte 196) says it waits, its deadline set.
  void* page = mmap(nullptr, kRingControlBytes, PROT_READ, MAP_SHARED, e.fd, 0);
  ASSERT_NE(page, MAP_FAILED);
  const auto* waiting = reinterpret_cast<const uint32_t*>(static_cast<uint8_t*>(page) + 196);
  ASSERT_TRUE(testing::Within(10s, [&] { return std::atomic_ref(*waiting).load() == 1; }));
  munmap(page, kRingControlBytes);
  clock.Advance(30s - 1ms);
  EXPECT_EQ(written.wait_for(30ms), std::future_status::timeout) << "it failed before its time";
  clock.Advance(1ms);
  ASSERT_EQ(written.wait_for(10s), std::future_status::ready) << "the timeout went unseen";
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "the peer took nothing for 30000 ms",
                     written.get());

  std::atomic<bool> gone{false};
  auto cut = std::async(std::launch::async, [&] {
    return Write(e.producer, Counting(1, 0), &rings, 30s, clock, [&] { return gone.load(); });
  });
  gone.store(true);
  ASSERT_EQ(cut.wait_for(10s), std::future_status::ready) << "the closed connection went unseen";
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "the peer went away", cut.get());
  close(e.fd);
}

TEST(FrameRing, ARingThatIsUnsealedNotFreshOrTheWrongSizeIsRefused) {
  const int raw = memfd_create("ferry-test-ring", MFD_CLOEXEC);
  ASSERT_GE(raw, 0);
  ASSERT_EQ(ftruncate(raw, kRingControlBytes + 4096), 0);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "not sealed against shrinking",
                     FrameRing::Map(raw, kRingControlBytes + 4096));
  close(raw);

  ASSERT_OK_AND_ASSIGN(Ends e, MakeEnds(4096));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "claims 12288 bytes and holds 8192",
                     FrameRing::Map(e.fd, kRingControlBytes + 8192));
  int rings = 0;
  ASSERT_OK(Write(e.producer, Counting(8, 0), &rings));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "not a fresh ring of 4096 bytes",
                     FrameRing::Map(e.fd, kRingControlBytes + 4096));
  close(e.fd);
}

// The counters' offsets in the first page (shm_ring.cpp): tail at byte 64, head at 128.
TEST(FrameRing, CountersThatLieAreErrorsNamingThem) {
  ASSERT_OK_AND_ASSIGN(Ends e, MakeEnds(4096));
  void* page = mmap(nullptr, kRingControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, e.fd, 0);
  ASSERT_NE(page, MAP_FAILED);
  auto* words = static_cast<uint64_t*>(page);
  words[8] = 100000;  // the producer claims more than the ring holds
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "the server's frame ring is corrupt: written to 100000, taken to 0",
                     e.consumer.Readable());
  words[8] = 0;
  words[16] = 5;  // the consumer claims to have taken what was never written
  int rings = 0;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "the client's frame ring is corrupt: taken to 5, written to 0",
                     Write(e.producer, Counting(8, 0), &rings));
  munmap(page, kRingControlBytes);
  close(e.fd);
}

}  // namespace
}  // namespace ferry::transport::internal::shm
