// Recycled receive buffers.
#if FERRY_WITH_UCX

#include "transport/ucx/buffer_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

namespace ferry::transport::ucx {

namespace {

// Large receive buffers are recycled, process-wide: a fresh 64 MiB allocation costs an mmap and
// 16,384 page faults, about as long as moving its bytes over shared memory. At most kMaxCached
// bytes wait here; a buffer is reused only for a message at least half its size.
class BufferPool {
 public:
  static constexpr size_t kMinPooled = size_t{1} << 20;
  static constexpr size_t kMaxCached = size_t{256} << 20;

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
      data = static_cast<uint8_t*>(std::aligned_alloc(64, capacity));
      if (data == nullptr) return nullptr;
    }
    return std::shared_ptr<uint8_t>(data, [capacity](uint8_t* p) { Get().Give(p, capacity); });
  }

 private:
  void Give(uint8_t* data, size_t capacity) {
    {
      std::lock_guard lock(mutex_);
      if (cached_ + capacity <= kMaxCached) {
        free_.emplace_back(capacity, data);
        cached_ += capacity;
        return;
      }
    }
    std::free(data);
  }

  std::mutex mutex_;
  std::vector<std::pair<size_t, uint8_t*>> free_;
  size_t cached_ = 0;
};

}  // namespace

std::shared_ptr<uint8_t> TakeBuffer(size_t size) { return BufferPool::Get().Take(size); }

}  // namespace ferry::transport::ucx

#endif  // FERRY_WITH_UCX
