// The CPU device: host memory, memcpy copies, no events or streams.

#include <cstdlib>
#include <cstring>

#include "device/device_support.hpp"
#include "ferry/core/mapping.hpp"
#include "ferry/device/device.hpp"

namespace ferry {

namespace {

// Blocks at least this large come straight from mmap with transparent huge pages requested:
// large host destinations fill much faster (cudf measured 1.5x on device-to-host copies).
constexpr int64_t kHugeThreshold = int64_t{4} << 20;

class Cpu final : public Device {
 public:
  Cpu() : Device(MemoryKind{ARROW_DEVICE_CPU, true, false, "CPU"}, -1) {}

  Result<void*> Allocate(int64_t size, void* /*stream*/) override {
    if (size < 0) return Status::Invalid("allocation of a negative size");
    CountAllocation();
    if (size >= kHugeThreshold) {
      Result<Mapping> pages = Mapping::Anonymous(size, {.huge_pages = true});
      if (!pages.ok()) return pages.status().WithContext("CPU");
      // Free gets only the pointer and size back: it adopts the mapping to unmap it.
      return std::move(*pages).Release();
    }
    const auto rounded = static_cast<size_t>((size + 63) / 64 * 64);
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (p == nullptr) {
      return Status::OutOfMemory("CPU: cannot allocate " + std::to_string(size) + " bytes");
    }
    return p;
  }

  void Free(void* ptr, int64_t size) noexcept override {
    if (ptr == nullptr) return;
    if (size >= kHugeThreshold) {
      const Mapping unmapped = Mapping::Adopt(ptr, size);
    } else {
      std::free(ptr);
    }
  }

  Status CopyBytes(Device& src_dev, const void* src, Device& dst_dev, void* dst, int64_t n,
                   void* /*stream*/) override {
    // Any two host-addressable memories (CPU, pinned, managed) copy with memcpy.
    if (!src_dev.host_accessible() || !dst_dev.host_accessible()) {
      return Status::NotSupported("CPU copies only between host-addressable memories");
    }
    std::memcpy(dst, src, static_cast<size_t>(n));
    CountCopy(n);
    return Status::OK();
  }

  Status SynchronizeEvent(void* event, void* stream) override {
    if (event != nullptr) return Status::Invalid("the CPU has no events, but one was given");
    if (stream != nullptr) return Status::Invalid("the CPU has no streams, but one was given");
    return Status::OK();
  }
};

}  // namespace

Device* CpuDevice() noexcept {
  // Never destroyed: arrays may outlive static destructors. Allocation failure at start-up is
  // fatal, as for any static.
  static Cpu* cpu = new Cpu();  // NOLINT(bugprone-unhandled-exception-at-new)
  return cpu;
}

}  // namespace ferry
