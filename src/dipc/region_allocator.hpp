// Space for type-1 bodies inside a server's shared region: first-fit blocks, coalesced on free,
// with allocations that wait for space. The wait is the server's backpressure: memory in flight
// never exceeds the region.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "dipc/spare_nodes.hpp"
#include "ferry/core/clock.hpp"
#include "ferry/core/host_buffer.hpp"
#include "ferry/core/result.hpp"
#include "ferry/transport/region.hpp"

namespace ferry::dipc::internal {

/// Hands out 64-byte-aligned blocks of a region of `capacity` bytes. Thread-safe.
class RegionAllocator {
 public:
  /// Waits for space are timed by `clock` (the server's).
  RegionAllocator(int64_t capacity, std::shared_ptr<Clock> clock);

  /// A block of `size` bytes (at least 64), waiting up to `timeout` (by the clock) for space. Fails
  /// with E2BIG when it can never fit, ETIMEDOUT when the wait ran out, ECANCELED when
  /// `cancelled()` turns true (checked whenever the allocator is woken).
  Result<int64_t> Allocate(int64_t size, std::chrono::milliseconds timeout,
                           const std::function<bool()>& cancelled = {});
  /// Return a block; an offset that is not an allocated block is ignored and reported false.
  bool Free(int64_t offset);
  /// Wake every waiting Allocate so it re-checks its cancellation.
  void Wake();

  int64_t capacity() const noexcept { return capacity_; }
  int64_t in_use() const;

 private:
  using Blocks = std::map<int64_t, int64_t>;  // offset -> size
  bool TryAllocate(int64_t size, int64_t* offset);

  const int64_t capacity_;
  const std::shared_ptr<Clock> clock_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  Blocks free_;  // coalesced
  Blocks used_;
  // Nodes taken out of free_ and used_, for the next blocks put in either. An allocation takes a
  // free block and puts back its rest and a used one; a free takes a used block and up to two
  // free neighbours and puts back one: after a client's burst of frees, the allocations take one
  // node more each than they give back, and find it here. Guarded by mutex_.
  SpareNodes<Blocks> spare_;
  int64_t in_use_ = 0;
};

/// Server::region_allocator: blocks of `region` from `allocator` as ferry::Allocator memory, each
/// allocation waiting up to `timeout` for room. Holds both, so a producer's buffers stay valid
/// (and can be freed) after the server is gone.
std::shared_ptr<Allocator> MakeRegionMemory(std::shared_ptr<transport::Region> region,
                                            std::shared_ptr<RegionAllocator> allocator,
                                            std::chrono::milliseconds timeout);

}  // namespace ferry::dipc::internal
