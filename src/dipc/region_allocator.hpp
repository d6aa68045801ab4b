// Space for type-1 bodies inside a server's shared region: first-fit blocks, coalesced on free,
// with allocations that wait for space. The wait is the server's backpressure: memory in flight
// never exceeds the region.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "ferry/core/clock.hpp"
#include "ferry/core/host_buffer.hpp"
#include "ferry/core/result.hpp"
#include "ferry/transport/region.hpp"

namespace ferry::dipc::internal {

/// Hands out 64-byte-aligned blocks of a region of `capacity` bytes. Thread-safe. It keeps only
/// the free spans, so its caller keeps each block's size and hands it back with the block;
/// Allocate and Free cost a scan of the first free spans and a binary search, no allocation.
class RegionAllocator {
 public:
  /// Waits for space are timed by `clock` (the server's).
  RegionAllocator(int64_t capacity, std::shared_ptr<Clock> clock);
  /// A block of `size` bytes (at least 64), waiting up to `timeout` (by the clock) for space. Fails
  /// with E2BIG when it can never fit, ETIMEDOUT when the wait ran out, ECANCELED when
  /// `cancelled()` turns true (checked whenever the allocator is woken).
  Result<int64_t> Allocate(int64_t size, std::chrono::milliseconds timeout,
                           const std::function<bool()>& cancelled = {});
  /// Return the block at `offset` that Allocate gave for `size` bytes. A block that is not
  /// 64-byte aligned, runs past the region, or overlaps free space (freed twice) is ignored and
  /// reported false; one lying inside another held block is not detected (the caller's record
  /// of its blocks is the check: RegionMemory keeps one for code outside the server).
  bool Free(int64_t offset, int64_t size);
  /// Wake every waiting Allocate so it re-checks its cancellation.
  void Wake();

  int64_t capacity() const noexcept { return capacity_; }
  int64_t in_use() const;
  /// Free spans, for tests: one when nothing is held.
  size_t free_spans() const;

 private:
  struct Span {
    int64_t offset;
    int64_t size;
  };
  bool TryAllocate(int64_t size, int64_t* offset);

  const int64_t capacity_;
  const std::shared_ptr<Clock> clock_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  // Coalesced and sorted by offset. A server's blocks are taken and given back mostly in
  // order, so there are few spans and an allocation takes from the front of the first: a
  // vector's binary search and short moves beat a tree's nodes here.
  std::vector<Span> free_;
  int64_t in_use_ = 0;
};

/// Server::region_allocator: blocks of `region` from `allocator` as ferry::Allocator memory, each
/// allocation waiting up to `timeout` for room. Holds both, so a producer's buffers stay valid
/// (and can be freed) after the server is gone.
std::shared_ptr<Allocator> MakeRegionMemory(std::shared_ptr<transport::Region> region,
                                            std::shared_ptr<RegionAllocator> allocator,
                                            std::chrono::milliseconds timeout);

}  // namespace ferry::dipc::internal
