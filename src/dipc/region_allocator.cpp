#include "dipc/region_allocator.hpp"

#include <cerrno>
#include <iterator>
#include <string>
#include <utility>

namespace ferry::dipc::internal {

namespace {
constexpr int64_t kAlign = 64;
}  // namespace

RegionAllocator::RegionAllocator(int64_t capacity, std::shared_ptr<Clock> clock)
    : capacity_(capacity / kAlign * kAlign), clock_(std::move(clock)), spare_(kSpareNodes) {
  if (capacity_ > 0) free_.emplace(0, capacity_);
}

bool RegionAllocator::TryAllocate(int64_t size, int64_t* offset) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    *offset = it->first;
    const int64_t rest = it->second - size;
    spare_.Take(free_, it);
    if (rest > 0) spare_.Insert(free_, *offset + size, rest);
    spare_.Insert(used_, *offset, size);
    in_use_ += size;
    return true;
  }
  return false;
}

Result<int64_t> RegionAllocator::Allocate(int64_t size, std::chrono::milliseconds timeout,
                                          const std::function<bool()>& cancelled) {
  const int64_t rounded = size <= 0 ? kAlign : (size + kAlign - 1) / kAlign * kAlign;
  if (size < 0 || rounded > capacity_) {
    return Status::ResourceExhausted("a body of " + std::to_string(size) +
                                     " bytes can never fit the shared region of " +
                                     std::to_string(capacity_) + " bytes");
  }
  std::unique_lock lock(mutex_);
  int64_t offset = 0;
  // Room at once is the usual case, and needs no wait (nor the wait's predicate made).
  if (TryAllocate(rounded, &offset)) return offset;
  bool allocated = false;
  clock_->WaitFor(freed_, lock, timeout, [&] {
    allocated = TryAllocate(rounded, &offset);
    return allocated || (cancelled && cancelled());
  });
  if (allocated) return offset;
  if (cancelled && cancelled()) return Status::Cancelled("the allocation was cancelled");
  return Status::DeadlineExceeded(
      "no room for a body of " + std::to_string(size) + " bytes in the shared region within " +
      std::to_string(timeout.count()) + " ms (" + std::to_string(in_use_) + " of " +
      std::to_string(capacity_) + " bytes are waiting for free_data)");
}

bool RegionAllocator::Free(int64_t offset) {
  {
    std::lock_guard lock(mutex_);
    auto used = used_.find(offset);
    if (used == used_.end()) return false;
    int64_t start = offset;
    int64_t size = used->second;
    in_use_ -= size;
    spare_.Take(used_, used);
    // Coalesce with the free neighbours on both sides.
    auto next = free_.lower_bound(start);
    if (next != free_.end() && start + size == next->first) {
      size += next->second;
      const auto after = std::next(next);
      spare_.Take(free_, next);
      next = after;
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        start = prev->first;
        size += prev->second;
        spare_.Take(free_, prev);
      }
    }
    spare_.Insert(free_, start, size);
  }
  freed_.notify_all();
  return true;
}

void RegionAllocator::Wake() {
  { std::lock_guard lock(mutex_); }
  freed_.notify_all();
}

int64_t RegionAllocator::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

namespace {

class RegionMemory final : public Allocator {
 public:
  RegionMemory(std::shared_ptr<transport::Region> region,
               std::shared_ptr<RegionAllocator> allocator, std::chrono::milliseconds timeout)
      : region_(std::move(region)), allocator_(std::move(allocator)), timeout_(timeout) {}

  Result<uint8_t*> Allocate(int64_t size) override {
    if (size < 0) return Status::Invalid("allocation of negative size");
    Result<int64_t> block = allocator_->Allocate(size, timeout_);  // 0 takes the least block
    if (!block.ok()) {
      return block.status().WithContext("allocating " + std::to_string(size) +
                                        " bytes in the server's shared region");
    }
    return region_->data() + *block;
  }
  void Free(uint8_t* ptr, int64_t /*size*/) noexcept override {
    if (ptr != nullptr) (void)allocator_->Free(ptr - region_->data());
  }

 private:
  const std::shared_ptr<transport::Region> region_;
  const std::shared_ptr<RegionAllocator> allocator_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace

std::shared_ptr<Allocator> MakeRegionMemory(std::shared_ptr<transport::Region> region,
                                            std::shared_ptr<RegionAllocator> allocator,
                                            std::chrono::milliseconds timeout) {
  return std::make_shared<RegionMemory>(std::move(region), std::move(allocator), timeout);
}

}  // namespace ferry::dipc::internal
