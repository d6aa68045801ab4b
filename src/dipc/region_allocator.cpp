#include "dipc/region_allocator.hpp"

#include <cerrno>
#include <iterator>
#include <string>
#include <utility>

namespace ferry::dipc::internal {

namespace {
constexpr int64_t kAlign = 64;
// An allocation takes a free block and puts back its rest and a used one; a free takes a used
// block and up to two free neighbours and puts back one. Clients free hundreds of blocks at
// once (a free_data message carries up to 1,024 addresses), and the allocations after them take
// one node more each than they give back: enough spare nodes for such a burst mean none is
// allocated. Spares are nodes that existed at once, so they never hold more than the peak did.
constexpr size_t kSpareNodes = 1024;
}  // namespace

RegionAllocator::RegionAllocator(int64_t capacity, std::shared_ptr<Clock> clock)
    : capacity_(capacity / kAlign * kAlign), clock_(std::move(clock)) {
  if (capacity_ > 0) free_.emplace(0, capacity_);
  spare_.reserve(kSpareNodes);
}

void RegionAllocator::Put(Blocks& to, int64_t offset, int64_t size) {
  if (spare_.empty()) {
    to.emplace(offset, size);
    return;
  }
  Blocks::node_type node = std::move(spare_.back());
  spare_.pop_back();
  node.key() = offset;
  node.mapped() = size;
  to.insert(std::move(node));
}

void RegionAllocator::Take(Blocks& from, Blocks::iterator it) {
  if (spare_.size() == kSpareNodes) {
    from.erase(it);
    return;
  }
  spare_.push_back(from.extract(it));
}

bool RegionAllocator::TryAllocate(int64_t size, int64_t* offset) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    *offset = it->first;
    const int64_t rest = it->second - size;
    Take(free_, it);
    if (rest > 0) Put(free_, *offset + size, rest);
    Put(used_, *offset, size);
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
    Take(used_, used);
    // Coalesce with the free neighbours on both sides.
    auto next = free_.lower_bound(start);
    if (next != free_.end() && start + size == next->first) {
      size += next->second;
      const auto after = std::next(next);
      Take(free_, next);
      next = after;
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        start = prev->first;
        size += prev->second;
        Take(free_, prev);
      }
    }
    Put(free_, start, size);
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
