// CountingAllocator: an Allocator that counts live blocks, so tests prove every allocation is
// freed exactly once and with its own size.
#pragma once

#include <map>
#include <mutex>

#include "ferry/core/host_buffer.hpp"

namespace ferry {

class CountingAllocator final : public Allocator {
 public:
  Result<uint8_t*> Allocate(int64_t size) override {
    FERRY_ASSIGN_OR_RAISE(uint8_t * p, DefaultAllocator()->Allocate(size));
    std::lock_guard<std::mutex> lock(mu_);
    live_[p] = size;
    ++allocations_;
    return p;
  }
  void Free(uint8_t* ptr, int64_t size) noexcept override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = live_.find(ptr);
      if (it == live_.end() || it->second != size) ++bad_frees_;
      if (it != live_.end()) live_.erase(it);
    }
    DefaultAllocator()->Free(ptr, size);
  }
  size_t live() const { return live_.size(); }
  int allocations() const { return allocations_; }
  int bad_frees() const { return bad_frees_; }

 private:
  std::mutex mu_;
  std::map<uint8_t*, int64_t> live_;
  int allocations_ = 0;
  int bad_frees_ = 0;
};

}  // namespace ferry
