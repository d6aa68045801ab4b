// Internal to the dissociated IPC: memory of one size handed back by its last owner and handed
// out again, for the shared_ptr each lent batch is held by (a client's borrowed body, a server's
// loan).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace ferry::dipc::internal {

// Blocks of one size (the first one handed back sets it), kept after their owner goes, up to
// `keep` of them, for the next allocation of that size. A reader holds at most about a free_data's
// batches (1,024) before it frees them, so a pool of that many makes each batch's holder cost no
// allocation once the stream runs. Thread-safe: a batch is made on one thread and let go on
// another. Owned by its PoolAllocators (shared), so it outlives the last block it handed out.
class BlockPool {
 public:
  explicit BlockPool(size_t keep) : keep_(keep) {}
  ~BlockPool() {
    for (void* block : blocks_) ::operator delete(block);
  }
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  /// `size` bytes: a kept block when there is one of that size, else the heap's.
  void* Take(size_t size) {
    {
      std::lock_guard lock(mutex_);
      if (size == block_size_ && !blocks_.empty()) {
        void* block = blocks_.back();
        blocks_.pop_back();
        return block;
      }
    }
    return ::operator new(size);
  }

  /// Hand `block` (of `size` bytes, from Take) back: kept when room remains and it is of the
  /// pool's size, else freed.
  void Put(void* block, size_t size) noexcept {
    {
      std::lock_guard lock(mutex_);
      if (block_size_ == 0) block_size_ = size;
      if (size == block_size_ && blocks_.size() < keep_) {
        blocks_.push_back(block);  // amortised: the list grows to its peak once
        return;
      }
    }
    ::operator delete(block);
  }

  /// Blocks kept now; for tests.
  size_t kept() {
    std::lock_guard lock(mutex_);
    return blocks_.size();
  }

 private:
  const size_t keep_;
  std::mutex mutex_;
  std::vector<void*> blocks_;  // each block_size_ bytes
  size_t block_size_ = 0;
};

// The allocator for std::allocate_shared whose memory comes from, and goes back to, a BlockPool,
// which it keeps alive until its last block is back.
template <class T>
class PoolAllocator {
 public:
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

  explicit PoolAllocator(std::shared_ptr<BlockPool> pool) noexcept : pool_(std::move(pool)) {}
  template <class U>
  PoolAllocator(const PoolAllocator<U>& other) noexcept : pool_(other.pool()) {}  // NOLINT

  T* allocate(size_t n) { return static_cast<T*>(pool_->Take(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { pool_->Put(p, n * sizeof(T)); }
  const std::shared_ptr<BlockPool>& pool() const noexcept { return pool_; }
  template <class U>
  bool operator==(const PoolAllocator<U>& other) const noexcept {
    return pool_ == other.pool();
  }

 private:
  std::shared_ptr<BlockPool> pool_;
};

}  // namespace ferry::dipc::internal
