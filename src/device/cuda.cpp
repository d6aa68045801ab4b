// CUDA devices (CUDA, CUDA_HOST, CUDA_MANAGED per GPU ordinal) over the driver API, loaded with
// dlopen. Contexts are the GPUs' primary contexts, retained on first use of an ordinal.
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/cuda_driver.hpp"
#include "device/cuda_gpu.hpp"
#include "device/device_support.hpp"

namespace ferry::internal {

namespace {

using cuda::CUcontext;
using cuda::CUdeviceptr;
using cuda::CUevent;
using cuda::CUresult;
using cuda::CUstream;
using cuda::Driver;
using cuda::Gpu;
using cuda::ScopedContext;
using cuda::StagingBlock;

CUdeviceptr Ptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

bool IsCudaType(ArrowDeviceType t) {
  return t == ARROW_DEVICE_CUDA || t == ARROW_DEVICE_CUDA_HOST || t == ARROW_DEVICE_CUDA_MANAGED;
}

MemoryKind KindOf(ArrowDeviceType t) {
  switch (t) {
    case ARROW_DEVICE_CUDA_HOST:
      return MemoryKind{t, true, true, "CUDA_HOST"};
    case ARROW_DEVICE_CUDA_MANAGED:
      return MemoryKind{t, true, true, "CUDA_MANAGED"};
    default:
      return MemoryKind{ARROW_DEVICE_CUDA, false, true, "CUDA"};
  }
}

const Driver* g_driver = nullptr;  // set before any CUDA event can exist

void DestroyEvent(void* handle) {
  if (g_driver != nullptr) g_driver->EventDestroy(*static_cast<CUevent*>(handle));
}

class CudaDevice final : public Device {
 public:
  CudaDevice(ArrowDeviceType type, Gpu& gpu)
      : Device(KindOf(type), gpu.ordinal()), gpu_(gpu), d_(gpu.driver()) {}

  Result<void*> Allocate(int64_t size, void* stream) override {
    if (size < 0) return Status::Invalid(ToString() + ": allocation of a negative size");
    if (size == 0) return static_cast<void*>(nullptr);
    ScopedContext scope(d_);
    FERRY_RETURN_NOT_OK(scope.Push(gpu_));
    CountAllocation();
    const auto n = static_cast<size_t>(size);
    switch (device_type()) {
      case ARROW_DEVICE_CUDA_HOST: {
        void* p = nullptr;
        FERRY_CUDA_CALL(d_, MemAllocHost(&p, n));
        return p;
      }
      case ARROW_DEVICE_CUDA_MANAGED: {
        CUdeviceptr p = 0;
        FERRY_CUDA_CALL(d_, MemAllocManaged(&p, n, cuda::kMemAttachGlobal));
        return reinterpret_cast<void*>(p);  // NOLINT(performance-no-int-to-ptr)
      }
      default: {
        CUdeviceptr p = 0;
        if (stream != nullptr && gpu_.memory_pools()) {
          const CUstream s = *static_cast<CUstream*>(stream);
          FERRY_CUDA_CALL(d_, MemAllocAsync(&p, n, s));
          gpu_.NoteOrdered(reinterpret_cast<void*>(p), s);  // NOLINT(performance-no-int-to-ptr)
        } else {
          FERRY_CUDA_CALL(d_, MemAlloc(&p, n));
        }
        return reinterpret_cast<void*>(p);  // NOLINT(performance-no-int-to-ptr)
      }
    }
  }

  void Free(void* ptr, int64_t /*size*/) noexcept override {
    if (ptr == nullptr) return;
    ScopedContext scope(d_);
    if (!scope.Push(gpu_).ok()) return;
    CUstream ordered = nullptr;
    if (device_type() == ARROW_DEVICE_CUDA_HOST) {
      d_.MemFreeHost(ptr);
    } else if (gpu_.TakeOrdered(ptr, &ordered)) {
      // cuMemFree would not wait for work still queued on the block: free it in that order. (A
      // stream the caller has since destroyed leaves only cuMemFree.)
      if (d_.MemFreeAsync(Ptr(ptr), ordered) != cuda::kSuccess) d_.MemFree(Ptr(ptr));
    } else {
      d_.MemFree(Ptr(ptr));
    }
  }

  Status CopyBytes(Device& src_dev, const void* src, Device& dst_dev, void* dst, int64_t n,
                   void* stream) override {
    const bool src_ok =
        src_dev.device_type() == ARROW_DEVICE_CPU || IsCudaType(src_dev.device_type());
    const bool dst_ok =
        dst_dev.device_type() == ARROW_DEVICE_CPU || IsCudaType(dst_dev.device_type());
    if (!src_ok || !dst_ok)
      return Status::NotSupported("CUDA copies only to and from CPU and CUDA");
    if (src_dev.host_accessible() && dst_dev.host_accessible()) {
      std::memcpy(dst, src, static_cast<size_t>(n));
      CountCopy(n);
      return Status::OK();
    }
    ScopedContext scope(d_);
    FERRY_RETURN_NOT_OK(scope.Push(gpu_));
    CUstream s = nullptr;
    if (stream != nullptr) {
      s = *static_cast<CUstream*>(stream);
    } else {
      FERRY_ASSIGN_OR_RAISE(void* internal, gpu_.InternalStream());
      s = *static_cast<CUstream*>(internal);
    }
    auto* other = dynamic_cast<CudaDevice*>(&src_dev == this ? &dst_dev : &src_dev);
    if (other != nullptr && &other->gpu_ != &gpu_ && !src_dev.host_accessible() &&
        !dst_dev.host_accessible()) {
      auto* s_dev = dynamic_cast<CudaDevice*>(&src_dev);
      auto* d_dev = dynamic_cast<CudaDevice*>(&dst_dev);
      FERRY_ASSIGN_OR_RAISE(CUcontext src_ctx, s_dev->gpu_.Context());
      FERRY_ASSIGN_OR_RAISE(CUcontext dst_ctx, d_dev->gpu_.Context());
      FERRY_CUDA_CALL(
          d_, MemcpyPeerAsync(Ptr(dst), dst_ctx, Ptr(src), src_ctx, static_cast<size_t>(n), s));
    } else if (stream != nullptr && src_dev.host_accessible() && IsPageable(src_dev, src)) {
      FERRY_RETURN_NOT_OK(CopyFromPageable(src, dst, static_cast<size_t>(n), s));
    } else if (stream != nullptr && dst_dev.host_accessible() && IsPageable(dst_dev, dst)) {
      FERRY_RETURN_NOT_OK(CopyToPageable(src, dst, static_cast<size_t>(n), s));
    } else {
      // Device memory, pinned memory, or a synchronous copy (no stream given): the caller waits
      // for the copy either way, so pageable memory goes through the driver's own staging, with
      // no hop to a host function's thread.
      FERRY_CUDA_CALL(d_, MemcpyAsync(Ptr(dst), Ptr(src), static_cast<size_t>(n), s));
    }
    CountCopy(n);
    if (stream == nullptr) {
      FERRY_CUDA_CALL(d_, StreamSynchronize(s));
      CountRoundTrip();
    }
    return Status::OK();
  }

  Status SynchronizeEvent(void* event, void* stream) override {
    ScopedContext scope(d_);
    FERRY_RETURN_NOT_OK(scope.Push(gpu_));
    if (event != nullptr) {
      CUevent ev = *static_cast<CUevent*>(event);
      CountEventWait();
      if (stream != nullptr) {
        FERRY_CUDA_CALL(d_, StreamWaitEvent(*static_cast<CUstream*>(stream), ev, 0));
      } else {
        FERRY_CUDA_CALL(d_, EventSynchronize(ev));
        CountRoundTrip();
      }
    } else if (stream != nullptr) {
      // A stream-only synchronize really drains the stream.
      FERRY_CUDA_CALL(d_, StreamSynchronize(*static_cast<CUstream*>(stream)));
      CountRoundTrip();
    }
    return Status::OK();
  }

  Status InitArray(ArrowDeviceArray* out, ArrowArray* array, void* event, void* stream) override {
    FERRY_RETURN_NOT_OK(internal::CheckInitArgs(out, array));
    if (event == nullptr && stream == nullptr) {
      internal::MoveIntoDeviceArray(*this, out, array, nullptr);
      return Status::OK();
    }
    ScopedContext scope(d_);
    FERRY_RETURN_NOT_OK(scope.Push(gpu_));
    CUevent ev = nullptr;
    bool created = false;
    if (event != nullptr) {
      ev = *static_cast<CUevent*>(event);
    } else {
      FERRY_CUDA_CALL(d_, EventCreate(&ev, cuda::kEventDisableTiming));
      created = true;
    }
    if (stream != nullptr) {
      CUresult rc = d_.EventRecord(ev, *static_cast<CUstream*>(stream));
      if (rc != cuda::kSuccess) {
        if (created) d_.EventDestroy(ev);
        return cuda::Error(d_, rc, "EventRecord");
      }
    }
    Status st = internal::MoveIntoDeviceArrayWithHandle(*this, out, array, ev, &DestroyEvent);
    if (!st.ok() && created) d_.EventDestroy(ev);
    return st;
  }

  Status MoveArray(Device& src_dev, ArrowDeviceArray* src, Device& dst_dev,
                   ArrowDeviceArray* dst) override {
    const ArrowDeviceType from = src_dev.device_type();
    const ArrowDeviceType to = dst_dev.device_type();
    auto* s = dynamic_cast<CudaDevice*>(&src_dev);
    auto* t = dynamic_cast<CudaDevice*>(&dst_dev);
    const bool same_gpu = s != nullptr && t != nullptr && &s->gpu_ == &t->gpu_;
    // Pinned or managed memory to the CPU: the host waits, then the buffers are the host's.
    if ((from == ARROW_DEVICE_CUDA_HOST || from == ARROW_DEVICE_CUDA_MANAGED) &&
        to == ARROW_DEVICE_CPU) {
      if (src->sync_event != nullptr)
        FERRY_RETURN_NOT_OK(s->SynchronizeEvent(src->sync_event, nullptr));
      internal::Relabel(src, dst_dev, dst, /*drop_event=*/true);
      return Status::OK();
    }
    // Pinned (with unified addressing) or managed memory to the same GPU: keep the event.
    if (same_gpu && to == ARROW_DEVICE_CUDA &&
        ((from == ARROW_DEVICE_CUDA_HOST && s->gpu_.unified_addressing()) ||
         from == ARROW_DEVICE_CUDA_MANAGED)) {
      FERRY_RETURN_NOT_OK(s->gpu_.Context().status());
      internal::Relabel(src, dst_dev, dst, /*drop_event=*/false);
      return Status::OK();
    }
    // CPU-labelled (or CUDA-labelled) arrays whose every buffer is pinned or managed memory.
    if (t != nullptr && (to == ARROW_DEVICE_CUDA_HOST || to == ARROW_DEVICE_CUDA_MANAGED) &&
        (from == ARROW_DEVICE_CPU || (same_gpu && from == ARROW_DEVICE_CUDA))) {
      ScopedContext scope(d_);
      FERRY_RETURN_NOT_OK(scope.Push(t->gpu_));
      bool all = internal::ForEachBuffer(&src->array, [&](const void* p) {
        if (to == ARROW_DEVICE_CUDA_MANAGED) {
          unsigned managed = 0;
          return d_.PointerGetAttribute(&managed, cuda::kPointerAttributeIsManaged, Ptr(p)) ==
                     cuda::kSuccess &&
                 managed != 0;
        }
        unsigned type = 0;
        return d_.PointerGetAttribute(&type, cuda::kPointerAttributeMemoryType, Ptr(p)) ==
                   cuda::kSuccess &&
               type == cuda::kMemoryTypeHost;
      });
      if (!all) {
        return Status::NotSupported(std::string("not every buffer is ") +
                                    (to == ARROW_DEVICE_CUDA_MANAGED ? "managed" : "pinned") +
                                    " memory");
      }
      internal::Relabel(src, dst_dev, dst, /*drop_event=*/from == ARROW_DEVICE_CPU);
      return Status::OK();
    }
    return Status::NotSupported("no zero-copy move from " + src_dev.ToString() + " to " +
                                dst_dev.ToString());
  }

  Result<void*> InternalStream() override { return gpu_.InternalStream(); }

  Result<int64_t> ReleaseCached() override {
    ScopedContext scope(d_);
    FERRY_RETURN_NOT_OK(scope.Push(gpu_));
    return gpu_.staging().Trim();
  }

  Result<std::shared_ptr<void>> RecordEvent(void* stream) override {
    if (stream == nullptr)
      return Status::Invalid(ToString() + ": recording an event needs a stream");
    ScopedContext scope(d_);
    FERRY_RETURN_NOT_OK(scope.Push(gpu_));
    CUevent ev = nullptr;
    FERRY_CUDA_CALL(d_, EventCreate(&ev, cuda::kEventDisableTiming));
    CUresult rc = d_.EventRecord(ev, *static_cast<CUstream*>(stream));
    if (rc != cuda::kSuccess) {
      d_.EventDestroy(ev);
      return cuda::Error(d_, rc, "EventRecord");
    }
    return std::shared_ptr<void>(new CUevent(ev), [](void* handle) {
      DestroyEvent(handle);
      delete static_cast<CUevent*>(handle);
    });
  }

  Gpu& gpu() { return gpu_; }

 private:
  // Whether `p` (on the host-accessible `dev`) is pageable memory: the driver would make the host
  // wait for a copy to or from it (a pageable source after draining the stream).
  bool IsPageable(Device& dev, const void* p) const {
    if (dev.device_type() != ARROW_DEVICE_CPU) return false;  // pinned or managed memory
    unsigned type = 0;
    return d_.PointerGetAttribute(&type, cuda::kPointerAttributeMemoryType, Ptr(p)) !=
           cuda::kSuccess;
  }

  // A pageable source: the host copies it into pinned memory now, the GPU copies from there.
  Status CopyFromPageable(const void* src, void* dst, size_t n, CUstream s) {
    Result<StagingBlock*> block = gpu_.staging().Acquire(n);
    if (!block.ok()) {  // too large to stage: the driver stages it (and the host waits)
      FERRY_CUDA_CALL(d_, MemcpyAsync(Ptr(dst), Ptr(src), n, s));
      return Status::OK();
    }
    std::memcpy((*block)->data, src, n);
    CUresult rc = d_.MemcpyAsync(Ptr(dst), Ptr((*block)->data), n, s);
    if (rc != cuda::kSuccess) {
      gpu_.staging().ReleaseNow(*block);
      return cuda::Error(d_, rc, "MemcpyAsync");
    }
    return gpu_.staging().Release(*block, s);
  }

  // What a host function needs to copy a staged block out to pageable memory.
  struct CopyOut {
    cuda::StagingPool* pool;
    StagingBlock* block;
    void* dst;
    size_t n;
  };

  static void RunCopyOut(void* user_data) {
    std::unique_ptr<CopyOut> task(static_cast<CopyOut*>(user_data));
    std::memcpy(task->dst, task->block->data, task->n);
    task->pool->ReleaseNow(task->block);
  }

  // A pageable destination: the GPU copies into pinned memory, and a host function on the stream
  // copies it out in stream order, so the host never waits here.
  Status CopyToPageable(const void* src, void* dst, size_t n, CUstream s) {
    Result<StagingBlock*> block = gpu_.staging().Acquire(n);
    if (!block.ok()) {  // too large to stage: the driver blocks until the copy is done
      FERRY_CUDA_CALL(d_, MemcpyAsync(Ptr(dst), Ptr(src), n, s));
      return Status::OK();
    }
    CUresult rc = d_.MemcpyAsync(Ptr((*block)->data), Ptr(src), n, s);
    if (rc != cuda::kSuccess) {
      gpu_.staging().ReleaseNow(*block);
      return cuda::Error(d_, rc, "MemcpyAsync");
    }
    auto task = std::make_unique<CopyOut>(CopyOut{&gpu_.staging(), *block, dst, n});
    rc = d_.LaunchHostFunc(s, &RunCopyOut, task.get());
    if (rc != cuda::kSuccess) {
      // The copy into the block may still be running: the block stays out of the pool.
      return cuda::Error(d_, rc, "LaunchHostFunc");
    }
    task.release();  // NOLINT(bugprone-unused-return-value): RunCopyOut owns it now
    return Status::OK();
  }

  Gpu& gpu_;
  const Driver& d_;
};

// Every GPU ordinal seen so far and its three devices; created on first resolve.
struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<Gpu>> gpus;
  std::vector<std::unique_ptr<CudaDevice>> devices;  // 3 per ordinal
};

// Destroyed at exit, which releases each retained primary context once (arrays on CUDA
// devices must be released before then).
Registry& GetRegistry() {
  static Registry registry;
  return registry;
}

}  // namespace

Result<StagingBuffer> AcquireStaging(Device& device, int64_t size) {
  auto* cuda = dynamic_cast<CudaDevice*>(&device);
  if (cuda == nullptr) return Status::NotSupported(device.ToString() + " has no staging pool");
  ScopedContext scope(cuda->gpu().driver());
  FERRY_RETURN_NOT_OK(scope.Push(cuda->gpu()));
  FERRY_ASSIGN_OR_RAISE(StagingBlock * block,
                        cuda->gpu().staging().Acquire(static_cast<size_t>(size)));
  return StagingBuffer{block->data, block};
}

Status ReleaseStaging(Device& device, const StagingBuffer& buffer, void* stream) {
  auto& cuda = dynamic_cast<CudaDevice&>(device);
  auto* block = static_cast<StagingBlock*>(buffer.token);
  if (stream == nullptr) {
    cuda.gpu().staging().ReleaseNow(block);
    return Status::OK();
  }
  ScopedContext scope(cuda.gpu().driver());
  FERRY_RETURN_NOT_OK(scope.Push(cuda.gpu()));
  return cuda.gpu().staging().Release(block, *static_cast<CUstream*>(stream));
}

Result<cuda::Gpu*> CudaGpuOf(Device& device) {
  auto* cuda = dynamic_cast<CudaDevice*>(&device);
  if (cuda == nullptr) {
    return Status::Invalid(device.ToString() + " is not a CUDA device");
  }
  FERRY_RETURN_NOT_OK(cuda->gpu().Context().status());
  return &cuda->gpu();
}

Result<Device*> ResolveCuda(ArrowDeviceType device_type, int64_t device_id) {
  FERRY_ASSIGN_OR_RAISE(const Driver* d, cuda::GetDriver());
  g_driver = d;
  int count = 0;
  FERRY_CUDA_CALL(*d, DeviceGetCount(&count));
  if (device_id < 0 || device_id >= count) {
    return Status::NotFound(std::string(DeviceTypeName(device_type)) + " device " +
                            std::to_string(device_id) + " does not exist (" +
                            std::to_string(count) + " GPU" + (count == 1 ? "" : "s") + ")");
  }
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.gpus.size() < static_cast<size_t>(count)) {
    for (int i = static_cast<int>(r.gpus.size()); i < count; ++i) {
      r.gpus.push_back(std::make_unique<Gpu>(*d, i));
      for (ArrowDeviceType t :
           {ARROW_DEVICE_CUDA, ARROW_DEVICE_CUDA_HOST, ARROW_DEVICE_CUDA_MANAGED}) {
        r.devices.push_back(std::make_unique<CudaDevice>(t, *r.gpus.back()));
      }
    }
  }
  const size_t kind = device_type == ARROW_DEVICE_CUDA        ? 0
                      : device_type == ARROW_DEVICE_CUDA_HOST ? 1
                                                              : 2;
  return static_cast<Device*>(r.devices[static_cast<size_t>(device_id) * 3 + kind].get());
}

Result<std::vector<DeviceInfo>> ListCuda() {
  FERRY_ASSIGN_OR_RAISE(const Driver* d, cuda::GetDriver());
  int version = 0;
  FERRY_CUDA_CALL(*d, DriverGetVersion(&version));
  int count = 0;
  FERRY_CUDA_CALL(*d, DeviceGetCount(&count));
  std::vector<DeviceInfo> out;
  for (int i = 0; i < count; ++i) {
    cuda::CUdevice dev = 0;
    FERRY_CUDA_CALL(*d, DeviceGet(&dev, i));
    DeviceInfo info;
    info.device_type = ARROW_DEVICE_CUDA;
    info.device_id = i;
    char name[256] = {0};
    FERRY_CUDA_CALL(*d, DeviceGetName(name, sizeof(name) - 1, dev));
    info.name = name;
    size_t bytes = 0;
    if (d->DeviceTotalMem != nullptr && d->DeviceTotalMem(&bytes, dev) == cuda::kSuccess) {
      info.memory_bytes = static_cast<int64_t>(bytes);
    }
    info.driver_version =
        std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
    FERRY_CUDA_CALL(*d, DeviceGetAttribute(&info.compute_major,
                                           cuda::kDeviceAttributeComputeCapabilityMajor, dev));
    FERRY_CUDA_CALL(*d, DeviceGetAttribute(&info.compute_minor,
                                           cuda::kDeviceAttributeComputeCapabilityMinor, dev));
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace ferry::internal
