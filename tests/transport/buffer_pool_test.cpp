// The UCX transport's receive buffers (transport/ucx/buffer_pool.hpp): a large buffer that comes
// back is reused for the next message of a similar size, and goes back to the system a second
// after its return when nothing reuses it; one of 4 MiB or more goes back lazily, its pages the
// kernel's to take for 30 s while it can still be reused. At exit the pool's reaper is joined and
// its cache emptied, so no thread of ferry's outlives main. The waits are timed by a ManualClock,
// which the tests move instead of waiting them out.
#if FERRY_WITH_UCX

#include "transport/ucx/buffer_pool.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ferry/core/sanitizers.hpp"
#include "support/clock_util.hpp"

namespace ferry::transport::internal::ucx {
namespace {

using namespace std::chrono_literals;
using ferry::testing::kTick;

constexpr size_t kMiB = size_t{1} << 20;
// How long a returned buffer waits for reuse, and then, when mapped, lazily.
constexpr auto kDecay = 1s;
constexpr auto kLazyDecay = 30s;

// The pool's decay runs on clock_ while a test runs; what earlier suites left cached is let go
// first.
class BufferPool : public ::testing::Test {
 protected:
  void SetUp() override {
    SetBufferPoolClock(clock_);
    ReleaseDue();
  }
  void TearDown() override { SetBufferPoolClock(nullptr); }

  // Move the clock past both decays of everything cached, and wait (bounded) for its release.
  void ReleaseDue() {
    clock_->Advance(kDecay + kLazyDecay);
    ASSERT_TRUE(AwaitBufferBytes(0, 0, 10s))
        << CachedBufferBytes() << " bytes still cached, " << LazyBufferBytes() << " lazily";
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
};

TEST_F(BufferPool, ALargeBufferIsReusedForASimilarSize) {
  std::shared_ptr<uint8_t> first = TakeBuffer(64 * kMiB);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first.get()) % 64, 0u);
  std::memset(first.get(), 0x5a, 64 * kMiB);  // every byte is writable
  uint8_t* const address = first.get();
  first.reset();
  EXPECT_EQ(CachedBufferBytes(), 64 * kMiB);
  // Reused for 40 MiB (at least half its size), not for 16 MiB.
  std::shared_ptr<uint8_t> small = TakeBuffer(16 * kMiB);
  EXPECT_NE(small.get(), address);
  std::shared_ptr<uint8_t> again = TakeBuffer(40 * kMiB);
  EXPECT_EQ(again.get(), address);
  EXPECT_EQ(CachedBufferBytes(), 0u);
}

// A small batch's body: the class is the next power of two, and a buffer serves only its class.
TEST_F(BufferPool, ASmallBufferIsReusedWithinItsClass) {
  constexpr size_t kKiB = 1024;
  std::shared_ptr<uint8_t> first = TakeBuffer(24 * kKiB);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first.get()) % 64, 0u);
  std::memset(first.get(), 0x5a, 32 * kKiB);  // the whole class is writable
  uint8_t* const address = first.get();
  first.reset();
  EXPECT_EQ(CachedBufferBytes(), 32 * kKiB);
  // Not for another class (40 KiB: 64 KiB), nor below 16 KiB (not recycled at all).
  std::shared_ptr<uint8_t> larger = TakeBuffer(40 * kKiB);
  std::shared_ptr<uint8_t> tiny = TakeBuffer(8 * kKiB);
  EXPECT_NE(larger.get(), address);
  EXPECT_NE(tiny.get(), address);
  std::shared_ptr<uint8_t> again = TakeBuffer(17 * kKiB);
  EXPECT_EQ(again.get(), address);
  // Past the largest class (512 KiB), a buffer is a large one: 1 MiB.
  TakeBuffer(600 * kKiB).reset();
  EXPECT_EQ(CachedBufferBytes(), kMiB);
  std::shared_ptr<uint8_t> large = TakeBuffer(kMiB);
  EXPECT_EQ(CachedBufferBytes(), 0u);
  large.reset();
  EXPECT_EQ(CachedBufferBytes(), kMiB);
  ReleaseDue();
  EXPECT_EQ(CachedBufferBytes(), 0u);
  tiny.reset();
  EXPECT_EQ(CachedBufferBytes(), 0u);
  larger.reset();
  again.reset();
  EXPECT_EQ(CachedBufferBytes(), 96 * kKiB);
  ReleaseDue();
}

// Many small buffers returned at once: 64 MiB of them wait, the rest go back at once.
TEST_F(BufferPool, AtMost64MiBOfSmallBuffersWait) {
  constexpr size_t kSize = 32 * 1024;
  std::vector<std::shared_ptr<uint8_t>> held;
  for (int i = 0; i < 2100; ++i) held.push_back(TakeBuffer(kSize));
  held.clear();
  EXPECT_EQ(CachedBufferBytes(), 64 * kMiB);
  ReleaseDue();
}

TEST_F(BufferPool, AnUnusedBufferGoesBackAfterTheDecay) {
  TakeBuffer(8 * kMiB).reset();
  TakeBuffer(2 * kMiB).reset();
  EXPECT_EQ(CachedBufferBytes(), 10 * kMiB);
  // Kept a second by the clock, not dropped at once, and not a tick less.
  ASSERT_TRUE(clock_->AwaitWaiters(1, 10s));  // the reaper waits for the first to be due
  clock_->Advance(kDecay - kTick);
  EXPECT_EQ(CachedBufferBytes(), 10 * kMiB);
  clock_->Advance(kTick);
  // The 2 MiB buffer (from the C heap) is gone; the mapped 8 MiB one waits lazily.
  EXPECT_TRUE(AwaitBufferBytes(0, 8 * kMiB, 10s))
      << CachedBufferBytes() << " bytes still cached, " << LazyBufferBytes() << " lazily";
  ReleaseDue();
  // The pool works again after its reaper has exited.
  TakeBuffer(8 * kMiB).reset();
  EXPECT_EQ(CachedBufferBytes(), 8 * kMiB);
}

// Past its second a mapped buffer is not unmapped: its pages are the kernel's to take
// (MADV_FREE), and the next message of its size still gets it. Unused for 30 s more, it goes.
TEST_F(BufferPool, AMappedBufferWaitsLazilyAfterTheDecay) {
  std::shared_ptr<uint8_t> first = TakeBuffer(8 * kMiB);
  ASSERT_NE(first, nullptr);
  std::memset(first.get(), 0x5a, 8 * kMiB);
  uint8_t* const address = first.get();
  first.reset();
  ASSERT_TRUE(clock_->AwaitWaiters(1, 10s));
  clock_->Advance(kDecay);
  ASSERT_TRUE(AwaitBufferBytes(0, 8 * kMiB, 10s))
      << CachedBufferBytes() << " bytes still cached, " << LazyBufferBytes() << " lazily";
  // Reused, and writable again (writing cancels the kernel's claim on its pages).
  std::shared_ptr<uint8_t> again = TakeBuffer(6 * kMiB);
  ASSERT_EQ(again.get(), address);
  EXPECT_EQ(LazyBufferBytes(), 0u);
  std::memset(again.get(), 0x3c, 8 * kMiB);
  EXPECT_EQ(again.get()[8 * kMiB - 1], 0x3c);
  again.reset();
  EXPECT_EQ(CachedBufferBytes(), 8 * kMiB);
  // Its second and its 30 s start at this return, and not a tick less is waited.
  ASSERT_TRUE(clock_->AwaitWaiters(1, 10s));
  clock_->Advance(kDecay);
  ASSERT_TRUE(AwaitBufferBytes(0, 8 * kMiB, 10s));
  clock_->Advance(kLazyDecay - kTick);
  EXPECT_EQ(LazyBufferBytes(), 8 * kMiB);
  clock_->Advance(kTick);
  EXPECT_TRUE(AwaitBufferBytes(0, 0, 10s)) << LazyBufferBytes() << " bytes still lazily";
}

// A forked child has no reaper thread (fork copies only the forking thread): it starts with
// nothing cached, and what it returns itself still goes back after the decay, by the clock the
// child moves. The parent keeps its own cache.
TEST_F(BufferPool, AForkedChildStartsEmptyAndDecaysItsOwn) {
  TakeBuffer(8 * kMiB).reset();
  ASSERT_EQ(CachedBufferBytes(), 8 * kMiB);
  // The reaper waits, holding none of the clock's locks, when the process forks.
  ASSERT_TRUE(clock_->AwaitWaiters(1, 10s));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (CachedBufferBytes() != 0 || LazyBufferBytes() != 0) _exit(1);
    TakeBuffer(4 * kMiB).reset();
    if (CachedBufferBytes() != 4 * kMiB) _exit(2);
    // The child's reaper sees the advance whether or not it waits yet.
    clock_->Advance(kDecay + kLazyDecay);
    if (!AwaitBufferBytes(0, 0, 10s)) _exit(3);
    _exit(0);
  }
  EXPECT_EQ(CachedBufferBytes(), 8 * kMiB);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: the parent's buffers were cached in the child; 2: the child's own return was not "
         "cached; 3: the child's cache did not decay";
}

// Threads a sanitizer's runtime keeps beside the program's: ThreadSanitizer starts one of its own
// with the first thread a process creates, and it lives until the process ends.
constexpr int kRuntimeThreads = FERRY_TSAN ? 1 : 0;

// The threads this process runs now (its entries in /proc/self/task).
int ThreadCount() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  int n = 0;
  while (const dirent* e = readdir(tasks)) n += e->d_name[0] != '.';
  closedir(tasks);
  return n;
}

// The process the test below starts (this binary again, FERRY_BUFFER_POOL_AT_EXIT set) does its
// work before main: a check registered with atexit before the pool exists runs after the pool's
// own exit handler, and ends the process with 0 only when the main thread is the last one left
// (beside a sanitizer runtime's own) and nothing is cached.
const bool kAtExitChild = [] {
  if (std::getenv("FERRY_BUFFER_POOL_AT_EXIT") == nullptr) return false;
  std::atexit([] {
    if (CachedBufferBytes() != 0 || LazyBufferBytes() != 0) _exit(3);
    // A joined thread's entry can stay in /proc/self/task for a moment after the join returns
    // (the kernel wakes the joiner before it removes the task), longest on a loaded machine:
    // look again for up to a second.
    for (int i = 0; i < 1000 && ThreadCount() != 1 + kRuntimeThreads; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    _exit(ThreadCount() == 1 + kRuntimeThreads ? 0 : 4);
  });
  TakeBuffer(8 * kMiB).reset();  // the pool is made, and its reaper starts
  if (CachedBufferBytes() != 8 * kMiB) _exit(2);
  std::exit(0);
}();

TEST_F(BufferPool, AtExitTheReaperIsJoinedAndNothingStaysCached) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("FERRY_BUFFER_POOL_AT_EXIT", "1", 1);
    execl("/proc/self/exe", "buffer_pool_at_exit", nullptr);
    _exit(1);
  }
  // Bounded: a reaper that never wakes for the exit would hang the child. Its pidfd turns
  // readable when it exits.
  const int exited = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  pollfd p{exited, POLLIN, 0};
  const bool on_time = exited >= 0 && poll(&p, 1, 10000) == 1;
  if (exited >= 0) close(exited);
  int status = 0;
  if (!on_time) kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(on_time) << "the process did not exit within 10 s: its exit waited on the reaper";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: exec failed; 2: the buffer was not cached; 3: buffers were still cached after the "
         "exit handler; 4: another thread was still running after it";
}

TEST_F(BufferPool, BuffersUnder16KiBAreNotCached) {
  std::shared_ptr<uint8_t> b = TakeBuffer(1000);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % 64, 0u);
  const size_t before = CachedBufferBytes();
  b.reset();
  EXPECT_EQ(CachedBufferBytes(), before);
}

}  // namespace
}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
