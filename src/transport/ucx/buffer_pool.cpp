// Recycled receive buffers.
#if FERRY_WITH_UCX

#include "transport/ucx/buffer_pool.hpp"

#include <pthread.h>
#include <sys/mman.h>
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
// mapped with transparent huge pages (a few dozen faults for 64 MiB, not 16,384). Such a buffer
// is not unmapped at its decay but handed to the kernel with MADV_FREE, and waits kLazyDecay more:
// the kernel takes its pages when it needs them, and a client that reads again within half a
// minute finds the pages it did not take still mapped, where fresh ones cost a fault and zeroing
// each (on this VM a fresh 1 GiB took 350-500 ms to write, a lazily freed one 50-115 ms, the
// same as writing it again). A forked child
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
  static constexpr std::chrono::seconds kLazyDecay{30};

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
        // A waiting buffer first; then a lazy one, whose pages the kernel did not take yet are
        // its again once written.
        std::vector<Cached>* list = &free_;
        size_t* bytes = &cached_;
        Cached* fit = BestFit(free_, size);
        if (fit == nullptr) {
          list = &lazy_;
          bytes = &lazy_bytes_;
          fit = BestFit(lazy_, size);
        }
        if (fit != nullptr) {
          capacity = fit->capacity;
          data = fit->data;
          *bytes -= capacity;
          list->erase(list->begin() + (fit - list->data()));
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

  size_t lazy() {
    std::lock_guard lock(mutex_);
    return lazy_bytes_;
  }

  bool Await(size_t cached, size_t lazy, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return cached_ == cached && lazy_bytes_ == lazy; });
  }

  // Entries waiting now start their wait anew by `clock`; the reaper waits on it from now on.
  void SetClock(std::shared_ptr<Clock> clock) {
    {
      std::lock_guard lock(mutex_);
      clock_ = clock != nullptr ? std::move(clock) : Clock::Real();
      ForEachList([&](std::vector<Cached>& list) {
        for (Cached& c : list) c.since = clock_->Now();
      });
      for (Cached& c : lazy_) c.since = clock_->Now();
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

  // The smallest buffer of `list` that serves `size` (at most twice its size), or NULL.
  static Cached* BestFit(std::vector<Cached>& list, size_t size) {
    Cached* best = nullptr;
    for (Cached& c : list) {
      if (c.capacity >= size && c.capacity / 2 <= size &&
          (best == nullptr || c.capacity < best->capacity)) {
        best = &c;
      }
    }
    return best;
  }

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
        const Clock::time_point now = clock_->Now();
        (small ? small_[SmallClass(capacity)] : free_).push_back({capacity, data, now});
        cached_ += capacity;
        if (small) small_cached_ += capacity;
        changed_.notify_all();
        // A reaper waiting out a lazy buffer's 30 s must come back for this one's second.
        if (now + kDecay < reaper_until_) {
          ++earlier_;
          wake_.notify_all();
        }
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
      cached.insert(cached.end(), lazy_.begin(), lazy_.end());
      lazy_.clear();
      cached_ = 0;
      small_cached_ = 0;
      lazy_bytes_ = 0;
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
    for (const Cached& c : lazy_) Release(c.data, c.capacity);
    lazy_.clear();
    cached_ = 0;
    small_cached_ = 0;
    lazy_bytes_ = 0;
    reaper_running_ = false;
    reaper_until_ = Clock::time_point::max();
    new (&reaper_) std::thread();
    new (&wake_) std::condition_variable();
    new (&changed_) std::condition_variable();
    mutex_.unlock();
  }

  // Once a cached buffer has waited kDecay by the clock, hands a mapped one to the kernel
  // (MADV_FREE) to wait kLazyDecay more, and releases the others; releases a lazy one at the end
  // of its wait. Exits when nothing is left or the pool closes.
  void Reap() {
    std::unique_lock lock(mutex_);
    while (!closed_ && (cached_ > 0 || lazy_bytes_ > 0)) {
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
      auto stale = std::partition(lazy_.begin(), lazy_.end(),
                                  [&](const Cached& c) { return now - c.since < kLazyDecay; });
      std::vector<Cached> gone(stale, lazy_.end());
      lazy_.erase(stale, lazy_.end());
      for (const Cached& c : gone) lazy_bytes_ -= c.capacity;
      if (!due.empty() || !gone.empty()) {
        changed_.notify_all();
        lock.unlock();
        std::vector<Cached> lazy;
        for (const Cached& c : due) {
          // One from the C heap, or where the kernel has no MADV_FREE, goes back at once.
          if (c.capacity >= kHuge && madvise(c.data, c.capacity, MADV_FREE) == 0) {
            lazy.push_back({c.capacity, c.data, c.since + kDecay});  // its lazy wait starts then
          } else {
            Release(c.data, c.capacity);
          }
        }
        for (const Cached& c : gone) Release(c.data, c.capacity);
        lock.lock();
        for (const Cached& c : lazy) {
          if (closed_ || lazy_bytes_ + c.capacity > max_cached_) {
            lock.unlock();
            Release(c.data, c.capacity);
            lock.lock();
            continue;
          }
          lazy_.push_back(c);
          lazy_bytes_ += c.capacity;
        }
        changed_.notify_all();
        continue;
      }
      auto next = Clock::time_point::max();
      ForEachList([&](std::vector<Cached>& list) {
        for (const Cached& c : list) next = std::min(next, c.since + kDecay);
      });
      for (const Cached& c : lazy_) next = std::min(next, c.since + kLazyDecay);
      // Close, SetClock and a return due before `next` (Give) wake it early.
      const uint64_t changes = clock_changes_;
      const uint64_t earlier = earlier_;
      reaper_until_ = next;
      clock->WaitUntil(wake_, lock, next,
                       [&] { return closed_ || clock_changes_ != changes || earlier_ != earlier; });
      reaper_until_ = Clock::time_point::max();
    }
    reaper_running_ = false;
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable changed_;  // cached_ or lazy_bytes_ changed (Await)
  std::shared_ptr<Clock> clock_ = Clock::Real();
  uint64_t clock_changes_ = 0;
  uint64_t earlier_ = 0;  // returns due before the reaper's wait ends (Give)
  Clock::time_point reaper_until_ = Clock::time_point::max();  // the end of the reaper's wait
  std::vector<Cached> free_;                                   // 1 MiB and more
  std::array<std::vector<Cached>, kSmallClasses> small_;       // by power-of-two class
  size_t cached_ = 0;                                          // bytes in all of them
  size_t small_cached_ = 0;                                    // of which in small_
  std::vector<Cached> lazy_;  // mapped buffers past kDecay, their pages the kernel's to take
  size_t lazy_bytes_ = 0;     // bytes in lazy_ (not in cached_)
  const size_t max_cached_ = MaxCached();
  std::thread reaper_;
  bool reaper_running_ = false;
  bool closed_ = false;
};

}  // namespace

std::shared_ptr<uint8_t> TakeBuffer(size_t size) { return BufferPool::Get().Take(size); }

size_t CachedBufferBytes() { return BufferPool::Get().cached(); }

size_t LazyBufferBytes() { return BufferPool::Get().lazy(); }

void SetBufferPoolClock(std::shared_ptr<Clock> clock) {
  BufferPool::Get().SetClock(std::move(clock));
}

bool AwaitBufferBytes(size_t cached, size_t lazy, std::chrono::milliseconds limit) {
  return BufferPool::Get().Await(cached, lazy, limit);
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
