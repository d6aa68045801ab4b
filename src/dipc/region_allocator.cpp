#include "dipc/region_allocator.hpp"

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <map>
#include <string>
#include <utility>

namespace ferry::dipc::internal {

namespace {
constexpr int64_t kAlign = 64;

// The bytes a block of `size` takes: whole 64-byte steps, at least one. One rule for Allocate
// and Free, so that what is taken is what is given back.
int64_t BlockBytes(int64_t size) {
  return size <= 0 ? kAlign : (size + kAlign - 1) / kAlign * kAlign;
}
}  // namespace

RegionAllocator::RegionAllocator(int64_t capacity, std::shared_ptr<Clock> clock)
    : capacity_(capacity / kAlign * kAlign), clock_(std::move(clock)) {
  if (capacity_ > 0) free_.push_back(Span{0, capacity_});
}

bool RegionAllocator::TryAllocate(int64_t size, int64_t* offset) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->size < size) continue;
    *offset = it->offset;
    // Taken from the front: the span keeps its place in the order.
    it->offset += size;
    it->size -= size;
    if (it->size == 0) free_.erase(it);
    in_use_ += size;
    return true;
  }
  return false;
}

Result<int64_t> RegionAllocator::Allocate(int64_t size, std::chrono::milliseconds timeout,
                                          const std::function<bool()>& cancelled) {
  const int64_t rounded = BlockBytes(size);
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

bool RegionAllocator::Free(int64_t offset, int64_t size) {
  const int64_t rounded = BlockBytes(size);
  if (offset < 0 || offset % kAlign != 0 || size < 0 || rounded > capacity_ - offset) {
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    const int64_t end = offset + rounded;
    // The first span past the block's start; the one before it, if any, starts before it.
    auto next = std::upper_bound(free_.begin(), free_.end(), offset,
                                 [](int64_t at, const Span& s) { return at < s.offset; });
    bool joins_prev = false;
    if (next != free_.begin()) {
      const int64_t prev_end = std::prev(next)->offset + std::prev(next)->size;
      if (prev_end > offset) return false;  // inside free space: freed twice
      joins_prev = prev_end == offset;
    }
    if (next != free_.end() && next->offset < end) return false;  // runs into free space
    const bool joins_next = next != free_.end() && next->offset == end;
    if (joins_prev && joins_next) {
      std::prev(next)->size += rounded + next->size;
      free_.erase(next);
    } else if (joins_prev) {
      std::prev(next)->size += rounded;
    } else if (joins_next) {
      next->offset = offset;
      next->size += rounded;
    } else {
      free_.insert(next, Span{offset, rounded});
    }
    in_use_ -= rounded;
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

size_t RegionAllocator::free_spans() const {
  std::lock_guard lock(mutex_);
  return free_.size();
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
    {
      std::lock_guard lock(mutex_);
      held_.emplace(*block, size);
    }
    return region_->data() + *block;
  }
  // The block's size is the one it was allocated with, whatever the caller says: a producer's
  // wrong size or a pointer it never got must not free a block the server lends.
  void Free(uint8_t* ptr, int64_t /*size*/) noexcept override {
    if (ptr == nullptr) return;
    const int64_t offset = ptr - region_->data();
    int64_t size = 0;
    {
      std::lock_guard lock(mutex_);
      auto it = held_.find(offset);
      if (it == held_.end()) return;
      size = it->second;
      held_.erase(it);
    }
    (void)allocator_->Free(offset, size);
  }

 private:
  const std::shared_ptr<transport::Region> region_;
  const std::shared_ptr<RegionAllocator> allocator_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::map<int64_t, int64_t> held_;  // offset -> size of each block handed out and not freed
};

}  // namespace

std::shared_ptr<Allocator> MakeRegionMemory(std::shared_ptr<transport::Region> region,
                                            std::shared_ptr<RegionAllocator> allocator,
                                            std::chrono::milliseconds timeout) {
  return std::make_shared<RegionMemory>(std::move(region), std::move(allocator), timeout);
}

}  // namespace ferry::dipc::internal
