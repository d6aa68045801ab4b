// Device buffer copies: pinned and pageable host <-> CUDA and device to device on one GPU, with
// ferry's BufferCopy against the driver's own cuMemcpy on the same buffers, in the same run, at
// 64 KiB, 1 MiB and 1 GiB. Skips (saying why) where there is no GPU.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_scale.hpp"
#include "device/cuda_driver.hpp"
#include "ferry/device/device_buffer.hpp"

namespace ferry {
namespace {

namespace cu = internal::cuda;
using testing::ScaledBytes;

// A pinned host block and a device block of the same size, both from ferry's devices.
struct PinnedPair {
  Device* host = nullptr;
  Device* gpu = nullptr;
  void* pinned = nullptr;
  void* device = nullptr;
  int64_t size = 0;
  const cu::Driver* driver = nullptr;
  cu::CUcontext context = nullptr;

  Status Open(int64_t n) {
    size = n;
    FERRY_ASSIGN_OR_RAISE(host, ResolveDevice(ARROW_DEVICE_CUDA_HOST, 0));
    FERRY_ASSIGN_OR_RAISE(gpu, ResolveDevice(ARROW_DEVICE_CUDA, 0));
    FERRY_ASSIGN_OR_RAISE(pinned, host->Allocate(n, nullptr));
    FERRY_ASSIGN_OR_RAISE(device, gpu->Allocate(n, nullptr));
    std::memset(pinned, 0x5A, static_cast<size_t>(n));
    FERRY_ASSIGN_OR_RAISE(driver, cu::GetDriver());
    cu::CUdevice dev = 0;
    FERRY_CUDA_CALL(*driver, DeviceGet(&dev, 0));
    FERRY_CUDA_CALL(*driver, DevicePrimaryCtxRetain(&context, dev));
    return Status::OK();
  }
  ~PinnedPair() {
    if (device != nullptr) gpu->Free(device, size);
    if (pinned != nullptr) host->Free(pinned, size);
    if (context != nullptr) {
      cu::CUdevice dev = 0;
      if (driver->DeviceGet(&dev, 0) == cu::kSuccess) driver->DevicePrimaryCtxRelease(dev);
    }
  }
};

void BM_Pinned(benchmark::State& state, bool to_device, bool use_ferry) {
  const int64_t n = state.range(0);
  PinnedPair p;
  Status st = p.Open(n);
  if (!st.ok()) {
    state.SkipWithError(("no CUDA GPU on this machine: " + st.message()).c_str());
    return;
  }
  const void* src = to_device ? p.pinned : p.device;
  void* dst = to_device ? p.device : p.pinned;
  Device& src_dev = to_device ? *p.host : *p.gpu;
  Device& dst_dev = to_device ? *p.gpu : *p.host;
  if (p.driver->CtxPushCurrent(p.context) != cu::kSuccess) std::abort();
  for (auto _ : state) {
    if (use_ferry) {
      if (!BufferCopy(src_dev, {src, n}, dst_dev, {dst, n}).ok()) std::abort();
    } else {
      // The driver's synchronous copy under unified addressing: the peer.
      if (p.driver->Memcpy(reinterpret_cast<cu::CUdeviceptr>(dst),
                           reinterpret_cast<cu::CUdeviceptr>(src),
                           static_cast<size_t>(n)) != cu::kSuccess) {
        std::abort();
      }
    }
  }
  cu::CUcontext popped = nullptr;
  p.driver->CtxPopCurrent(&popped);
  state.SetBytesProcessed(state.iterations() * n);
}

// Pageable host memory (an ordinary vector on the CPU device) <-> CUDA on the same buffers.
// Synchronous: ferry's BufferCopy against cuMemcpy; a synchronous copy hands pageable memory to
// the driver as it is (the caller waits either way). `on_stream`: the copies ordered on a stream,
// then waited for: BufferCopyAsync (which stages copies up to 64 MiB through its pinned pool, so
// that the calling thread never waits for the stream) against cuMemcpyAsync (for pageable memory
// the driver makes the calling thread wait).
void BM_Pageable(benchmark::State& state, bool to_device, bool use_ferry, bool on_stream) {
  const int64_t n = state.range(0);
  PinnedPair p;  // only its device block and context are used
  Status st = p.Open(n);
  if (!st.ok()) {
    state.SkipWithError(("no CUDA GPU on this machine: " + st.message()).c_str());
    return;
  }
  std::vector<uint8_t> pageable(static_cast<size_t>(n), 0x3C);
  const void* src = to_device ? static_cast<const void*>(pageable.data()) : p.device;
  void* dst = to_device ? p.device : static_cast<void*>(pageable.data());
  Device& src_dev = to_device ? *CpuDevice() : *p.gpu;
  Device& dst_dev = to_device ? *p.gpu : *CpuDevice();
  const auto from = reinterpret_cast<cu::CUdeviceptr>(src);
  const auto to = reinterpret_cast<cu::CUdeviceptr>(dst);
  if (p.driver->CtxPushCurrent(p.context) != cu::kSuccess) std::abort();
  cu::CUstream stream = nullptr;
  if (on_stream && p.driver->StreamCreate(&stream, 0) != cu::kSuccess) std::abort();
  for (auto _ : state) {
    bool ok = false;
    if (!on_stream) {
      ok = use_ferry ? BufferCopy(src_dev, {src, n}, dst_dev, {dst, n}).ok()
                     : p.driver->Memcpy(to, from, static_cast<size_t>(n)) == cu::kSuccess;
    } else {
      ok = (use_ferry ? BufferCopyAsync(src_dev, {src, n}, dst_dev, {dst, n}, &stream).ok()
                      : p.driver->MemcpyAsync(to, from, static_cast<size_t>(n), stream) ==
                            cu::kSuccess) &&
           p.driver->StreamSynchronize(stream) == cu::kSuccess;
    }
    if (!ok) std::abort();
  }
  if (stream != nullptr) p.driver->StreamDestroy(stream);
  cu::CUcontext popped = nullptr;
  p.driver->CtxPopCurrent(&popped);
  state.SetBytesProcessed(state.iterations() * n);
}

// Device to device on one GPU: ferry's BufferCopy between two blocks of cuda:0 against
// cuMemcpy of the same blocks. Between device blocks cuMemcpy returns before the copy has run (the
// driver's documented behaviour), so the peer then waits for its stream, as BufferCopy, which
// returns with the bytes in place, does.
void BM_DeviceToDevice(benchmark::State& state, bool use_ferry) {
  const int64_t n = state.range(0);
  PinnedPair p;  // its device block is the source
  Status st = p.Open(n);
  if (!st.ok()) {
    state.SkipWithError(("no CUDA GPU on this machine: " + st.message()).c_str());
    return;
  }
  Result<void*> other = p.gpu->Allocate(n, nullptr);
  if (!other.ok()) {
    state.SkipWithError(other.status().message().c_str());
    return;
  }
  if (p.driver->CtxPushCurrent(p.context) != cu::kSuccess) std::abort();
  for (auto _ : state) {
    if (use_ferry) {
      if (!BufferCopy(*p.gpu, {p.device, n}, *p.gpu, {*other, n}).ok()) std::abort();
    } else if (p.driver->Memcpy(reinterpret_cast<cu::CUdeviceptr>(*other),
                                reinterpret_cast<cu::CUdeviceptr>(p.device),
                                static_cast<size_t>(n)) != cu::kSuccess ||
               p.driver->StreamSynchronize(nullptr) != cu::kSuccess) {
      std::abort();
    }
  }
  cu::CUcontext popped = nullptr;
  p.driver->CtxPopCurrent(&popped);
  p.gpu->Free(*other, n);
  state.SetBytesProcessed(state.iterations() * n);
}

// Each copy at 64 KiB, 1 MiB and 1 GiB, ferry beside the driver's cuMemcpy.
void RegisterCopies() {
  const std::vector<int64_t> sizes = {int64_t{1} << 16, int64_t{1} << 20,
                                      ScaledBytes(int64_t{1} << 30)};
  for (const bool use_ferry : {true, false}) {
    const std::string who = use_ferry ? "ferry" : "cuMemcpy";
    for (const bool to_device : {true, false}) {
      const std::string way = to_device ? "HostToDevice_" : "DeviceToHost_";
      auto* pinned = benchmark::RegisterBenchmark(("BM_Pinned/" + way + who).c_str(), BM_Pinned,
                                                  to_device, use_ferry);
      auto* pageable = benchmark::RegisterBenchmark(("BM_Pageable/" + way + who).c_str(),
                                                    BM_Pageable, to_device, use_ferry, false);
      auto* pageable_async = benchmark::RegisterBenchmark(("BM_PageableAsync/" + way + who).c_str(),
                                                          BM_Pageable, to_device, use_ferry, true);
      for (const int64_t n : sizes) {
        pinned->Arg(n);
        pageable->Arg(n);
        pageable_async->Arg(n);
      }
      pinned->UseRealTime();
      pageable->UseRealTime();
      pageable_async->UseRealTime();
    }
    auto* d2d = benchmark::RegisterBenchmark(("BM_DeviceToDevice/" + who).c_str(),
                                             BM_DeviceToDevice, use_ferry);
    for (const int64_t n : sizes) d2d->Arg(n);
    d2d->UseRealTime();
  }
}

const bool kCopiesRegistered = (RegisterCopies(), true);

// Copy bandwidth into an existing destination (no allocation in the loop), 1 GiB, between the
// CPU and another device. With `raw`, the same blocks are copied with std::memcpy instead: the
// peer, valid where both blocks are host memory (PoCL's CPU device keeps SVM in host memory).
void BM_BufferCopy_1GiB(benchmark::State& state, ArrowDeviceType from, ArrowDeviceType to,
                        bool raw) {
  const int64_t n = ScaledBytes(int64_t{1} << 30);
  auto src_dev = ResolveDevice(from, 0);
  auto dst_dev = ResolveDevice(to, 0);
  if (!src_dev.ok() || !dst_dev.ok()) {
    state.SkipWithError(("device missing on this machine: " +
                         (src_dev.ok() ? dst_dev.status() : src_dev.status()).message())
                            .c_str());
    return;
  }
  auto src = (*src_dev)->Allocate(n, nullptr);
  auto dst = (*dst_dev)->Allocate(n, nullptr);
  if (!src.ok() || !dst.ok()) std::abort();
  std::vector<char> pattern(1 << 20, 0x5A);
  for (int64_t at = 0; at < n; at += 1 << 20) {  // fill the source through its device
    if (!BufferCopy(*CpuDevice(), {pattern.data(), 1 << 20}, **src_dev,
                    {static_cast<char*>(*src) + at, 1 << 20})
             .ok()) {
      std::abort();
    }
  }
  // One untimed copy touches every destination page.
  if (!BufferCopy(**src_dev, {*src, n}, **dst_dev, {*dst, n}).ok()) std::abort();
  for (auto _ : state) {
    if (raw) {
      std::memcpy(*dst, *src, static_cast<size_t>(n));
      benchmark::ClobberMemory();
    } else if (!BufferCopy(**src_dev, {*src, n}, **dst_dev, {*dst, n}).ok()) {
      std::abort();
    }
  }
  (*src_dev)->Free(*src, n);
  (*dst_dev)->Free(*dst, n);
  state.SetBytesProcessed(state.iterations() * n);
}
BENCHMARK_CAPTURE(BM_BufferCopy_1GiB, CPU_to_CPU_memcpy, ARROW_DEVICE_CPU, ARROW_DEVICE_CPU, true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_BufferCopy_1GiB, GUARDED_to_CPU, ARROW_DEVICE_EXT_DEV, ARROW_DEVICE_CPU, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_BufferCopy_1GiB, CPU_to_OPENCL, ARROW_DEVICE_CPU, ARROW_DEVICE_OPENCL, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_BufferCopy_1GiB, CPU_to_OPENCL_memcpy, ARROW_DEVICE_CPU, ARROW_DEVICE_OPENCL,
                  true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_BufferCopy_1GiB, OPENCL_to_CPU, ARROW_DEVICE_OPENCL, ARROW_DEVICE_CPU, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_BufferCopy_1GiB, OPENCL_to_CPU_memcpy, ARROW_DEVICE_OPENCL, ARROW_DEVICE_CPU,
                  true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_BufferCopy_1GiB, CPU_to_CUDA, ARROW_DEVICE_CPU, ARROW_DEVICE_CUDA, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace ferry
