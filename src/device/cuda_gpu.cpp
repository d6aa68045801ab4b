// GPU ordinals: primary contexts, the internal stream and the pinned staging pool.
#include "device/cuda_gpu.hpp"

#include <algorithm>
#include <bit>
#include <memory>
#include <string>

namespace ferry::internal::cuda {

StagingPool::~StagingPool() { Clear(); }

void StagingPool::Clear() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  for (StagingBlock* b : blocks_) {
    if (b->ready != nullptr) d_.EventDestroy(b->ready);
    d_.MemFreeHost(b->data);
    delete b;
  }
  blocks_.clear();
  pooled_ = 0;
}

Result<int64_t> StagingPool::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t freed = 0;
  std::vector<StagingBlock*> kept;
  for (StagingBlock* b : blocks_) {
    bool idle = !b->in_use;
    if (idle && b->pending) {
      const CUresult rc = d_.EventQuery(b->ready);
      if (rc != kSuccess && rc != kNotReady) return Error(d_, rc, "EventQuery");
      idle = rc == kSuccess;
    }
    if (!idle) {
      kept.push_back(b);
      continue;
    }
    if (b->ready != nullptr) d_.EventDestroy(b->ready);
    d_.MemFreeHost(b->data);
    pooled_ -= b->size;
    freed += static_cast<int64_t>(b->size);
    delete b;
  }
  blocks_.swap(kept);
  return freed;
}

Result<StagingBlock*> StagingPool::Acquire(size_t size) {
  if (size > kMaxBlockBytes) {
    return Status::NotSupported("a staging block of " + std::to_string(size) + " bytes is above " +
                                std::to_string(kMaxBlockBytes));
  }
  std::lock_guard<std::mutex> lock(mu_);
  StagingBlock* best = nullptr;
  for (StagingBlock* b : blocks_) {
    if (b->in_use || b->size < size || (best != nullptr && best->size <= b->size)) continue;
    if (b->pending) {
      // Not a wait: a block whose last copy is still running is skipped.
      CUresult rc = d_.EventQuery(b->ready);
      if (rc == kNotReady) continue;
      if (rc != kSuccess) return Error(d_, rc, "EventQuery");
      b->pending = false;
    }
    best = b;
  }
  if (best != nullptr) {
    best->in_use = true;
    return best;
  }
  const size_t bytes = std::max<size_t>(std::bit_ceil(size), size_t{64} << 10);
  if (pooled_ + bytes > kMaxPooledBytes) {
    return Status::NotSupported("the pinned staging pool is full (" + std::to_string(pooled_) +
                                " bytes in use or in flight)");
  }
  auto block = std::make_unique<StagingBlock>();
  void* p = nullptr;
  FERRY_CUDA_CALL(d_, MemAllocHost(&p, bytes));
  block->data = static_cast<uint8_t*>(p);
  block->size = bytes;
  CUresult rc = d_.EventCreate(&block->ready, kEventDisableTiming);
  if (rc != kSuccess) {
    d_.MemFreeHost(p);
    return Error(d_, rc, "EventCreate");
  }
  block->in_use = true;
  pooled_ += bytes;
  blocks_.push_back(block.get());
  return block.release();
}

Status StagingPool::Release(StagingBlock* block, CUstream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  CUresult rc = d_.EventRecord(block->ready, stream);
  block->in_use = false;
  if (rc != kSuccess) {
    // Without the event the block cannot be known to be free: keep it out of use for good.
    block->in_use = true;
    return Error(d_, rc, "EventRecord");
  }
  block->pending = true;
  return Status::OK();
}

void StagingPool::ReleaseNow(StagingBlock* block) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  block->pending = false;
  block->in_use = false;
}

Gpu::~Gpu() {
  // Symmetric with the retain in Context(); runs at exit for ordinals that were used.
  if (ctx_ == nullptr) return;
  d_.CtxPushCurrent(ctx_);
  if (stream_ != nullptr) {
    d_.StreamSynchronize(stream_);
    d_.StreamDestroy(stream_);
  }
  staging_.Clear();  // while the context is current; the internal stream has drained
  CUcontext ignored = nullptr;
  d_.CtxPopCurrent(&ignored);
  d_.DevicePrimaryCtxRelease(device_);
}

Result<CUcontext> Gpu::Context() {
  std::call_once(once_, [&] { init_ = Init(); });
  if (!init_.ok()) return init_;
  return ctx_;
}

Result<void*> Gpu::InternalStream() {
  FERRY_RETURN_NOT_OK(Context().status());
  return static_cast<void*>(&stream_);
}

Status Gpu::Init() {
  FERRY_CUDA_CALL(d_, DeviceGet(&device_, ordinal_));
  FERRY_CUDA_CALL(d_, DevicePrimaryCtxRetain(&ctx_, device_));
  int value = 0;
  if (d_.DeviceGetAttribute(&value, kDeviceAttributeUnifiedAddressing, device_) == kSuccess) {
    unified_ = value != 0;
  }
  value = 0;
  if (d_.MemAllocAsync != nullptr && d_.MemFreeAsync != nullptr &&
      d_.DeviceGetAttribute(&value, kDeviceAttributeMemoryPoolsSupported, device_) == kSuccess) {
    pools_ = value != 0;
  }
  FERRY_CUDA_CALL(d_, CtxPushCurrent(ctx_));
  CUresult rc = d_.StreamCreate(&stream_, kStreamNonBlocking);
  CUcontext ignored = nullptr;
  d_.CtxPopCurrent(&ignored);
  if (rc != kSuccess) return Error(d_, rc, "StreamCreate");
  return Status::OK();
}

void Gpu::NoteOrdered(void* p, CUstream stream) {
  std::lock_guard<std::mutex> lock(ordered_mu_);
  ordered_[p] = stream;
}

bool Gpu::TakeOrdered(void* p, CUstream* stream) {
  std::lock_guard<std::mutex> lock(ordered_mu_);
  auto it = ordered_.find(p);
  if (it == ordered_.end()) return false;
  *stream = it->second;
  ordered_.erase(it);
  return true;
}

Status ScopedContext::Push(Gpu& gpu) {
  FERRY_ASSIGN_OR_RAISE(CUcontext ctx, gpu.Context());
  FERRY_CUDA_CALL(d_, CtxPushCurrent(ctx));
  pushed_ = true;
  return Status::OK();
}

ScopedContext::~ScopedContext() {
  if (pushed_) {
    CUcontext ignored = nullptr;
    d_.CtxPopCurrent(&ignored);
  }
}

}  // namespace ferry::internal::cuda
