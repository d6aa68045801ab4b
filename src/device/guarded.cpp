// The guarded device: memfd-backed memory mapped twice, PROT_NONE for the pointers it hands
// out and read-write for its own copies.
#include "ferry/device/guarded.hpp"

#include <sys/mman.h>  // memfd_create
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "device/device_support.hpp"
#include "ferry/core/mapping.hpp"

namespace ferry {

namespace {

constexpr size_t kSlabSize = size_t{64} << 20;
constexpr size_t kPage = 4096;

struct Chunk {
  Mapping guard_pages;       // PROT_NONE: what callers see
  Mapping alias_pages;       // read-write: what the device uses
  uint8_t* guard = nullptr;  // guard_pages.data()
  uint8_t* alias = nullptr;  // alias_pages.data()
  size_t size = 0;
  size_t used = 0;
  int64_t live = 0;
};

class Guarded final : public Device {
 public:
  Guarded() : Device(MemoryKind{ARROW_DEVICE_EXT_DEV, false, true, "GUARDED"}, 0) {}

  Result<void*> Allocate(int64_t size, void* /*stream*/) override {
    if (size < 0) return Status::Invalid("guarded: allocation of a negative size");
    CountAllocation();
    const size_t rounded = (static_cast<size_t>(size) + 63) / 64 * 64 + 64;
    std::lock_guard<std::mutex> lock(mu_);
    Chunk* chunk = nullptr;
    if (rounded > kSlabSize / 4) {
      FERRY_ASSIGN_OR_RAISE(chunk, MapChunk((rounded + kPage - 1) / kPage * kPage));
    } else {
      if (current_ == nullptr || current_->size - current_->used < rounded) {
        Chunk* old = current_;
        FERRY_ASSIGN_OR_RAISE(current_, MapChunk(kSlabSize));
        if (old != nullptr && old->live == 0) UnmapChunk(old);
      }
      chunk = current_;
    }
    uint8_t* p = chunk->guard + chunk->used;
    chunk->used += rounded;
    chunk->live += 1;
    return static_cast<void*>(p);
  }

  void Free(void* ptr, int64_t /*size*/) noexcept override {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    Chunk* chunk = Find(ptr, 0);
    // A double free must be loud: it would hand one block to two owners.
    if (chunk == nullptr || chunk->live == 0) {
      std::fprintf(stderr, "ferry: guarded device: free of %p, which is not a live block\n", ptr);
      std::abort();
    }
    chunk->live -= 1;
    if (chunk->live == 0 && chunk != current_) UnmapChunk(chunk);
  }

  Status CopyBytes(Device& src_dev, const void* src, Device& dst_dev, void* dst, int64_t n,
                   void* /*stream*/) override {
    const bool src_guarded = &src_dev == this;
    const bool dst_guarded = &dst_dev == this;
    if ((!src_guarded && !src_dev.host_accessible()) ||
        (!dst_guarded && !dst_dev.host_accessible())) {
      return Status::NotSupported("guarded copies only to and from host memory");
    }
    const void* from = src;
    void* to = dst;
    if (src_guarded) {
      FERRY_ASSIGN_OR_RAISE(from, Alias(src, n, "source"));
    }
    if (dst_guarded) {
      FERRY_ASSIGN_OR_RAISE(const void* a, Alias(dst, n, "destination"));
      to = const_cast<void*>(a);
    }
    std::memmove(to, from, static_cast<size_t>(n));
    CountCopy(n);
    return Status::OK();
  }

  Status SynchronizeEvent(void* event, void* stream) override {
    GuardedEvent* ev = event ? *static_cast<GuardedEvent**>(event) : nullptr;
    GuardedStream* st = stream ? *static_cast<GuardedStream**>(stream) : nullptr;
    if (event != nullptr && ev == nullptr)
      return Status::Invalid("guarded: the event handle is NULL");
    if (stream != nullptr && st == nullptr)
      return Status::Invalid("guarded: the stream handle is NULL");
    if (ev != nullptr) {
      CountEventWait();
      if (st != nullptr) {
        ev->stream_waits += 1;
        st->event_waits += 1;
      } else {
        ev->host_waits += 1;
        CountRoundTrip();
      }
    } else if (st != nullptr) {
      st->synchronizes += 1;
      CountRoundTrip();
    }
    return Status::OK();
  }

  Status InitArray(ArrowDeviceArray* out, ArrowArray* array, void* event, void* stream) override {
    FERRY_RETURN_NOT_OK(internal::CheckInitArgs(out, array));
    GuardedStream* st = stream ? *static_cast<GuardedStream**>(stream) : nullptr;
    GuardedEvent* ev = nullptr;
    if (event != nullptr) {
      ev = *static_cast<GuardedEvent**>(event);
      if (ev == nullptr) return Status::Invalid("guarded: the event handle is NULL");
    } else if (st != nullptr) {
      ev = new GuardedEvent();
    }
    if (ev == nullptr) {
      internal::MoveIntoDeviceArray(*this, out, array, nullptr);
      return Status::OK();
    }
    if (st != nullptr) ev->records += 1;
    return internal::MoveIntoDeviceArrayWithHandle(
        *this, out, array, ev, [](void* handle) { delete *static_cast<GuardedEvent**>(handle); });
  }

  Result<void*> InternalStream() override { return static_cast<void*>(&internal_stream_); }

  int64_t LiveAllocations() noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t n = 0;
    for (const auto& entry : chunks_) n += entry.second->live;
    return n;
  }

  bool Contains(const void* ptr, int64_t n) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    return Find(ptr, n) != nullptr;
  }

 private:
  Result<Chunk*> MapChunk(size_t size) {
    int fd = memfd_create("ferry-guarded", MFD_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "guarded: memfd_create");
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
      close(fd);
      return Status::OutOfMemory("guarded: cannot size a memfd to " + std::to_string(size));
    }
    const auto n = static_cast<int64_t>(size);
    Result<Mapping> guard = Mapping::OfFile(fd, n, {.access = MapAccess::kNone, .shared = true},
                                            "the guarded device's memfd");
    Result<Mapping> alias = Mapping::OfFile(fd, n, {.shared = true}, "the guarded device's memfd");
    close(fd);  // the mappings keep the memory alive
    if (!guard.ok()) return guard.status().WithContext("guarded");
    if (!alias.ok()) return alias.status().WithContext("guarded");
    auto* chunk = new Chunk{std::move(*guard), std::move(*alias), nullptr, nullptr, size, 0, 0};
    chunk->guard = chunk->guard_pages.data();
    chunk->alias = chunk->alias_pages.data();
    chunks_[reinterpret_cast<uintptr_t>(chunk->guard)] = chunk;
    return chunk;
  }

  void UnmapChunk(Chunk* chunk) noexcept {
    chunks_.erase(reinterpret_cast<uintptr_t>(chunk->guard));
    delete chunk;  // its mappings unmap
  }

  Chunk* Find(const void* ptr, int64_t n) noexcept {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    auto it = chunks_.upper_bound(p);
    if (it == chunks_.begin()) return nullptr;
    --it;
    Chunk* c = it->second;
    if (p + static_cast<uintptr_t>(n) > it->first + c->used) return nullptr;
    return c;
  }

  Result<const void*> Alias(const void* ptr, int64_t n, const char* role) {
    std::lock_guard<std::mutex> lock(mu_);
    Chunk* c = Find(ptr, n);
    if (c == nullptr) {
      return Status::Invalid(std::string("guarded: the ") + role + " range of " +
                             std::to_string(n) + " bytes is not guarded device memory");
    }
    return static_cast<const void*>(c->alias + (static_cast<const uint8_t*>(ptr) - c->guard));
  }

  std::mutex mu_;
  std::map<uintptr_t, Chunk*> chunks_;
  Chunk* current_ = nullptr;
  GuardedStream stream_object_;
  GuardedStream* internal_stream_ = &stream_object_;
};

Guarded* Instance() noexcept {
  // Never destroyed, like the CPU device.
  static Guarded* device = new Guarded();  // NOLINT(bugprone-unhandled-exception-at-new)
  return device;
}

}  // namespace

Device* GuardedDevice() noexcept { return Instance(); }

bool IsGuardedMemory(ByteSpan bytes) noexcept {
  return Instance()->Contains(bytes.data, bytes.size);
}

int64_t GuardedLiveAllocations() noexcept { return Instance()->LiveAllocations(); }

}  // namespace ferry
