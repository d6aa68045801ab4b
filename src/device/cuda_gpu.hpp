// One GPU ordinal as ferry's CUDA devices share it: the primary context, ferry's internal stream,
// and a pool of pinned host memory that stages copies to and from pageable memory, so that no
// stream-ordered copy makes the host wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "device/cuda_driver.hpp"
#include "ferry/core/result.hpp"

namespace ferry::internal::cuda {

/// A block of the staging pool: pinned memory, and the event that says when its last user is done.
struct StagingBlock {
  uint8_t* data = nullptr;
  size_t size = 0;
  CUevent ready = nullptr;  // recorded at release; the block is free once it has completed
  bool pending = false;     // `ready` was recorded and may not have completed yet
  bool in_use = false;
};

/// Pinned host memory, reused. Blocks are kept until exit (at most kMaxPooledBytes in all); a
/// request above kMaxBlockBytes, or one the cap refuses, is ENOTSUP: the caller copies directly.
class StagingPool {
 public:
  static constexpr size_t kMaxBlockBytes = size_t{64} << 20;
  static constexpr size_t kMaxPooledBytes = size_t{256} << 20;

  explicit StagingPool(const Driver& d) : d_(d) {}
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  /// A free block of at least `size` bytes (the GPU's context must be current).
  Result<StagingBlock*> Acquire(size_t size);
  /// Hand a block back; it is reused once the work queued on `stream` so far has completed.
  Status Release(StagingBlock* block, CUstream stream);
  /// Hand a block back for reuse now (its user is done: the host waited, or a host function on
  /// the stream copied it out). Makes no driver call, so a host function may call it.
  void ReleaseNow(StagingBlock* block) noexcept;
  /// Free every block (at exit, with the GPU's context current and its streams drained).
  void Clear() noexcept;
  /// Free the blocks no one uses and whose last copy has completed (the GPU's context must be
  /// current); returns the bytes freed.
  Result<int64_t> Trim();

 private:
  const Driver& d_;
  std::mutex mu_;
  std::vector<StagingBlock*> blocks_;
  size_t pooled_ = 0;
};

/// One GPU ordinal: its primary context (retained on first use), ferry's internal stream and its
/// staging pool. Lives until exit.
class Gpu {
 public:
  Gpu(const Driver& d, int ordinal) : d_(d), ordinal_(ordinal), staging_(d) {}
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  /// The primary context, retained (and the internal stream created) on the first call.
  Result<CUcontext> Context();
  /// A pointer to the internal stream's handle (a `CUstream*`, as stream arguments are).
  Result<void*> InternalStream();
  bool unified_addressing() const { return unified_; }
  bool memory_pools() const { return pools_; }
  int ordinal() const { return ordinal_; }
  const Driver& driver() const { return d_; }
  StagingPool& staging() { return staging_; }
  /// Remember that `p` was allocated ordered on `stream` (cuMemAllocAsync) ...
  void NoteOrdered(void* p, CUstream stream);
  /// ... and, when it was, forget it and say on which stream, so that its free is ordered there.
  bool TakeOrdered(void* p, CUstream* stream);

 private:
  Status Init();

  const Driver& d_;
  int ordinal_;
  std::once_flag once_;
  Status init_;
  int device_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  bool unified_ = false;
  bool pools_ = false;
  StagingPool staging_;
  std::mutex ordered_mu_;
  std::unordered_map<void*, CUstream> ordered_;
};

/// Makes a GPU's context current for the scope of one call.
class ScopedContext {
 public:
  explicit ScopedContext(const Driver& d) : d_(d) {}
  Status Push(Gpu& gpu);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  const Driver& d_;
  bool pushed_ = false;
};

}  // namespace ferry::internal::cuda

namespace ferry {
class Device;
}

namespace ferry::internal {

/// The GPU behind a CUDA, CUDA_HOST or CUDA_MANAGED device (its context retained); EINVAL for
/// other devices.
Result<cuda::Gpu*> CudaGpuOf(Device& device);

}  // namespace ferry::internal
