// Mapping: the one owner of mmap'd memory in ferry (anonymous memory, a file's or a memfd's
// bytes), so that every mapping is made, advised, grown and unmapped the same way.
#pragma once

#include <cstdint>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

namespace ferry {

/// What a mapping's pages allow: nothing (a guard), reading, or reading and writing.
enum class MapAccess { kNone, kRead, kReadWrite };

/// How to map. Plain values; the defaults make private read-write memory.
struct MappingOptions {
  MapAccess access = MapAccess::kReadWrite;
  /// MAP_SHARED: writes reach the file or memfd and every other mapping of it; else private.
  bool shared = false;
  /// MAP_POPULATE: fault every page in now rather than on first touch.
  bool populate = false;
  /// MADV_HUGEPAGE where the kernel offers it (512x fewer faults on large buffers); a hint.
  bool huge_pages = false;
};

/// An owned memory mapping. Move-only; the destructor unmaps. Costs one mmap and one munmap; a
/// mapping of 0 bytes maps nothing and holds a null pointer.
class FERRY_EXPORT Mapping {
 public:
  /// `size` bytes of fresh, zeroed anonymous memory. Errors (ENOMEM) name the size.
  static Result<Mapping> Anonymous(int64_t size, MappingOptions options = {});
  /// The first `size` bytes of `fd` (a file or memfd; the caller keeps or closes the
  /// descriptor: the mapping does not need it). Errors name `what` and the system's reason.
  static Result<Mapping> OfFile(int fd, int64_t size, MappingOptions options,
                                const char* what = "a file");
  /// Take ownership of a mapping made by Release (a pointer handed through an API that only
  /// carries pointers, such as Device::Allocate and Free).
  static Mapping Adopt(void* data, int64_t size) noexcept { return Mapping(data, size); }

  Mapping() noexcept = default;
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  uint8_t* data() const noexcept { return static_cast<uint8_t*>(data_); }
  int64_t size() const noexcept { return size_; }

  /// Grow (or shrink) to `size` bytes with mremap, which may move the pages but never copies
  /// bytes; new pages of anonymous memory come zeroed. An empty mapping becomes Anonymous.
  Status Resize(int64_t size, MappingOptions options = {});
  /// Tell the kernel how the pages will be used (madvise: MADV_DONTNEED, MADV_HUGEPAGE, ...).
  /// A hint: the kernel's refusal is returned, and callers may ignore it.
  Status Advise(int advice) const;
  /// Give up ownership: the caller unmaps, later, through Adopt.
  void* Release() && noexcept;

 private:
  Mapping(void* data, int64_t size) noexcept : data_(data), size_(size) {}
  void* data_ = nullptr;
  int64_t size_ = 0;
};

}  // namespace ferry
