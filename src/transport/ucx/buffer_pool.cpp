// Recycled receive buffers.
#if FERRY_WITH_UCX

#include "transport/ucx/buffer_pool.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "ferry/core/mapping.hpp"

namespace ferry::transport::internal::ucx {

namespace {

// Large receive buffers are recycled, process-wide: a fresh 64 MiB allocation costs an mmap and
// 16,384 page faults, about as long as moving its bytes over shared memory, and on a VM whose
// host takes freed pages back (balloon, free page reporting) each fault can also wait for the
// host. A returned buffer waits here for reuse for at most kDecay, then goes back to the system,
// as jemalloc's decay does: a process that reads again and again reuses its memory, and an idle
// one holds none of it after a second. A buffer is reused only for a message at least half its
// size. Small buffers (16 KiB to 1 MiB: a small batch's body) are recycled too, in power-of-two
// classes, at most kMaxSmallCached of them: taken on the progress thread and freed on the
// reader's, they made glibc trim and regrow that thread's heap, zeroing fresh pages for every
// batch (a third of a UCX client's time on 1,000-row batches). Fresh buffers of 4 MiB and more are
// mapped with transparent huge pages (a few dozen faults for 64 MiB, not 16,384). A forked child
// starts with nothing cached: its parent's buffers go back to the system in the child, which has no
// reaper thread (fork copies only the forking thread), and the child's own returns start a reaper
// of its own.
class BufferPool {
 public:
  static constexpr size_t kMinPooled = size_t{16} << 10;
  static constexpr size_t kMinLarge = size_t{1} << 20;
  static constexpr size_t kMaxSmallCached = size_t{64} << 20;
  // Small classes: capacities 16 KiB, 32 KiB, ... 512 KiB.
  static constexpr int kSmallClasses = std::countr_zero(kMinLarge) - std::countr_zero(kMinPooled);
  static constexpr size_t kHuge = size_t{4} << 20;
  static constexpr std::chrono::milliseconds kDecay{1000};

  // Leaked on purpose: buffers may come back during static destruction.
  static BufferPool& Get() {
    static auto* pool = [] {
      auto* made = new BufferPool();
      // The mutex is held across fork, so the child's copy of the cache is consistent.
      pthread_atfork([] { Get().mutex_.lock(); }, [] { Get().mutex_.unlock(); },
                     [] { Get().AfterForkInChild(); });
      // At exit (or when a dlclose unloads this code) the reaper is joined and the cache
      // emptied, so no thread of ferry's outlives main: a thread that starts or ends while
      // LeakSanitizer's exit check stops the world can crash its tracer.
      std::atexit([] { Get().Close(); });
      return made;
    }();
    return *pool;
  }

  std::shared_ptr<uint8_t> Take(size_t size) {
    if (size < kMinPooled) {
      const size_t rounded = (std::max<size_t>(size, 1) + 63) / 64 * 64;
      return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)),
                                      [](uint8_t* p) { std::free(p); });
    }
    size_t capacity = 0;
    uint8_t* data = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (size <= kMinLarge / 2) {
        // The class whose capacity is the next power of two: any of its buffers fits. (Past
        // 512 KiB a buffer is large: 1 MiB.)
        capacity = std::bit_ceil(size);
        std::vector<Cached>& list = small_[SmallClass(capacity)];
        if (!list.empty()) {
          data = list.back().data;  // the latest returned: the likeliest still in cache
          list.pop_back();
          cached_ -= capacity;
          small_cached_ -= capacity;
          changed_.notify_all();
        }
      } else {
        auto best = free_.end();
        for (auto it = free_.begin(); it != free_.end(); ++it) {
          if (it->capacity >= size && it->capacity / 2 <= size &&
              (best == free_.end() || it->capacity < best->capacity)) {
            best = it;
          }
        }
        if (best != free_.end()) {
          capacity = best->capacity;
          data = best->data;
          cached_ -= capacity;
          free_.erase(best);
          changed_.notify_all();
        }
      }
    }
    if (data == nullptr) {
      if (size > kMinLarge / 2) capacity = (size + kMinLarge - 1) / kMinLarge * kMinLarge;
      data = Allocate(capacity);
      if (data == nullptr) return nullptr;
    }
    return std::shared_ptr<uint8_t>(data, [capacity](uint8_t* p) { Get().Give(p, capacity); });
  }

  size_t cached() {
    std::lock_guard lock(mutex_);
    return cached_;
  }

  bool AwaitCached(size_t bytes, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return cached_ == bytes; });
  }

  // Entries waiting now start their wait anew by `clock`; the reaper waits on it from now on.
  void SetClock(std::shared_ptr<Clock> clock) {
    {
      std::lock_guard lock(mutex_);
      clock_ = clock != nullptr ? std::move(clock) : Clock::Real();
      ForEachList([&](std::vector<Cached>& list) {
        for (Cached& c : list) c.since = clock_->Now();
      });
      ++clock_changes_;
    }
    wake_.notify_all();
  }

 private:
  struct Cached {
    size_t capacity;
    uint8_t* data;
    Clock::time_point since;  // by clock_
  };

  static int SmallClass(size_t capacity) {
    return std::countr_zero(capacity) - std::countr_zero(kMinPooled);
  }

  // Every list of cached buffers: the large ones, then each small class.
  template <typename Fn>
  void ForEachList(Fn fn) {
    fn(free_);
    for (std::vector<Cached>& list : small_) fn(list);
  }

  // At most an eighth of the machine's memory, and 2 GiB, waits for reuse.
  static size_t MaxCached() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    const size_t eighth = pages > 0 && page > 0
                              ? static_cast<size_t>(pages) / 8 * static_cast<size_t>(page)
                              : size_t{256} << 20;
    return std::min(eighth, size_t{2} << 30);
  }

  static uint8_t* Allocate(size_t capacity) {
    if (capacity < kHuge) return static_cast<uint8_t*>(std::aligned_alloc(64, capacity));
    Result<Mapping> pages =
        Mapping::Anonymous(static_cast<int64_t>(capacity), {.huge_pages = true});
    if (!pages.ok()) return nullptr;
    // The pool tracks buffers by pointer; Release adopts the mapping back to unmap it.
    return static_cast<uint8_t*>(std::move(*pages).Release());
  }

  static void Release(uint8_t* data, size_t capacity) {
    if (capacity < kHuge) {
      std::free(data);
    } else {
      const Mapping unmapped = Mapping::Adopt(data, static_cast<int64_t>(capacity));
    }
  }

  void Give(uint8_t* data, size_t capacity) {
    {
      std::lock_guard lock(mutex_);
      const bool small = capacity < kMinLarge;
      if (!closed_ && cached_ + capacity <= max_cached_ &&
          (!small || small_cached_ + capacity <= kMaxSmallCached) && StartReaper()) {
        (small ? small_[SmallClass(capacity)] : free_).push_back({capacity, data, clock_->Now()});
        cached_ += capacity;
        if (small) small_cached_ += capacity;
        changed_.notify_all();
        return;
      }
    }
    Release(data, capacity);
  }

  // The reaper lives only while something is cached and sleeps until the oldest entry is due,
  // so no timer runs in a process that holds nothing here. False when no thread can be started
  // (then nothing is cached). Called with the mutex held: a reaper that ended on its own has
  // already left the mutex for good, so joining it here waits only for its exit.
  bool StartReaper() {
    if (reaper_running_) return true;
    if (reaper_.joinable()) reaper_.join();
    try {
      reaper_ = std::thread([this] { Reap(); });
      pthread_setname_np(reaper_.native_handle(), "ferry-ucx-reap");
    } catch (const std::system_error&) {
      return false;
    }
    reaper_running_ = true;
    return true;
  }

  // At exit: joins the reaper and returns every cached buffer; later returns are not cached.
  void Close() {
    std::vector<Cached> cached;
    std::thread reaper;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      ForEachList([&](std::vector<Cached>& list) {
        cached.insert(cached.end(), list.begin(), list.end());
        list.clear();
      });
      cached_ = 0;
      small_cached_ = 0;
      reaper = std::move(reaper_);
    }
    wake_.notify_all();
    changed_.notify_all();
    if (reaper.joinable()) reaper.join();
    for (const Cached& c : cached) Release(c.data, c.capacity);
  }

  // In a forked child, with the mutex held by the fork: the parent's reaper did not come along,
  // so what waits here would wait for ever; the child may never read again. The reaper's handle
  // and the condition variables (which may count the parent's threads as waiters) are made anew
  // in place, without their destructors: they name nothing in the child.
  void AfterForkInChild() {
    ForEachList([](std::vector<Cached>& list) {
      for (const Cached& c : list) Release(c.data, c.capacity);
      list.clear();
    });
    cached_ = 0;
    small_cached_ = 0;
    reaper_running_ = false;
    new (&reaper_) std::thread();
    new (&wake_) std::condition_variable();
    new (&changed_) std::condition_variable();
    mutex_.unlock();
  }

  // Releases each cached buffer once it has waited kDecay by the clock, and exits when none is
  // left or the pool closes.
  void Reap() {
    std::unique_lock lock(mutex_);
    while (!closed_ && cached_ > 0) {
      const std::shared_ptr<Clock> clock = clock_;  // SetClock may replace it while we wait
      const Clock::time_point now = clock->Now();
      std::vector<Cached> due;
      ForEachList([&](std::vector<Cached>& list) {
        auto keep = std::partition(list.begin(), list.end(),
                                   [&](const Cached& c) { return now - c.since < kDecay; });
        due.insert(due.end(), keep, list.end());
        list.erase(keep, list.end());
      });
      for (const Cached& c : due) {
        cached_ -= c.capacity;
        if (c.capacity < kMinLarge) small_cached_ -= c.capacity;
      }
      if (!due.empty()) {
        changed_.notify_all();
        lock.unlock();
        for (const Cached& c : due) Release(c.data, c.capacity);
        lock.lock();
        continue;
      }
      auto oldest = now;
      ForEachList([&](std::vector<Cached>& list) {
        for (const Cached& c : list) oldest = std::min(oldest, c.since);
      });
      // Only Close and SetClock wake it early; a new entry is due later than the oldest.
      const uint64_t changes = clock_changes_;
      clock->WaitUntil(wake_, lock, oldest + kDecay,
                       [&] { return closed_ || clock_changes_ != changes; });
    }
    reaper_running_ = false;
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable changed_;  // cached_ changed (AwaitCached)
  std::shared_ptr<Clock> clock_ = Clock::Real();
  uint64_t clock_changes_ = 0;
  std::vector<Cached> free_;                              // 1 MiB and more
  std::array<std::vector<Cached>, kSmallClasses> small_;  // by power-of-two class
  size_t cached_ = 0;                                     // bytes in all of them
  size_t small_cached_ = 0;                               // of which in small_
  const size_t max_cached_ = MaxCached();
  std::thread reaper_;
  bool reaper_running_ = false;
  bool closed_ = false;
};

}  // namespace

std::shared_ptr<uint8_t> TakeBuffer(size_t size) { return BufferPool::Get().Take(size); }

size_t CachedBufferBytes() { return BufferPool::Get().cached(); }

void SetBufferPoolClock(std::shared_ptr<Clock> clock) {
  BufferPool::Get().SetClock(std::move(clock));
}

bool AwaitCachedBufferBytes(size_t bytes, std::chrono::milliseconds limit) {
  return BufferPool::Get().AwaitCached(bytes, limit);
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
