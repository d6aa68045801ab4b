// Recycled receive buffers.
#if FERRY_WITH_UCX

#include "transport/ucx/buffer_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

namespace ferry::transport::ucx {

namespace {

// Large receive buffers are recycled, process-wide: a fresh 64 MiB allocation costs an mmap and
// 16,384 page faults, about as long as moving its bytes over shared memory. At most kMaxCached
// bytes wait here; a buffer is reused only for a message at least half its size. Fresh buffers
// of 4 MiB and more are mapped with transparent huge pages (a few dozen faults for 64 MiB, not
// 16,384), since a reader keeping more than kMaxCached alive gets fresh ones for every batch.
class BufferPool {
 public:
  static constexpr size_t kMinPooled = size_t{1} << 20;
  static constexpr size_t kMaxCached = size_t{256} << 20;
  static constexpr size_t kHuge = size_t{4} << 20;

  // Leaked on purpose: buffers may come back during static destruction.
  static BufferPool& Get() {
    static auto* pool = new BufferPool();
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
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->first >= size && it->first / 2 <= size &&
            (best == free_.end() || it->first < best->first)) {
          best = it;
        }
      }
      if (best != free_.end()) {
        capacity = best->first;
        data = best->second;
        cached_ -= capacity;
        free_.erase(best);
      }
    }
    if (data == nullptr) {
      capacity = (size + kMinPooled - 1) / kMinPooled * kMinPooled;
      data = Allocate(capacity);
      if (data == nullptr) return nullptr;
    }
    return std::shared_ptr<uint8_t>(data, [capacity](uint8_t* p) { Get().Give(p, capacity); });
  }

 private:
  static uint8_t* Allocate(size_t capacity) {
    if (capacity < kHuge) return static_cast<uint8_t*>(std::aligned_alloc(64, capacity));
    void* p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    madvise(p, capacity, MADV_HUGEPAGE);
    return static_cast<uint8_t*>(p);
  }

  static void Release(uint8_t* data, size_t capacity) {
    if (capacity < kHuge) {
      std::free(data);
    } else {
      munmap(data, capacity);
    }
  }

  void Give(uint8_t* data, size_t capacity) {
    {
      std::lock_guard lock(mutex_);
      if (cached_ + capacity <= kMaxCached) {
        free_.emplace_back(capacity, data);
        cached_ += capacity;
        return;
      }
    }
    Release(data, capacity);
  }

  std::mutex mutex_;
  std::vector<std::pair<size_t, uint8_t*>> free_;
  size_t cached_ = 0;
};

}  // namespace

std::shared_ptr<uint8_t> TakeBuffer(size_t size) { return BufferPool::Get().Take(size); }

}  // namespace ferry::transport::ucx

#endif  // FERRY_WITH_UCX
