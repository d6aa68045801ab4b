// HostBuffer: owned, 64-byte aligned, growable host memory over a pluggable Allocator.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "ferry/abi/export.h"
#include "ferry/core/bytes.hpp"
#include "ferry/core/result.hpp"

namespace ferry {

/// Where HostBuffers get their memory. Implementations must return 64-byte aligned blocks and be
/// thread-safe. The default allocator uses aligned heap memory.
class FERRY_EXPORT Allocator {
 public:
  virtual ~Allocator() = default;
  /// A block of `size` bytes (size may be 0), 64-byte aligned, or OutOfMemory.
  virtual Result<uint8_t*> Allocate(int64_t size) = 0;
  /// Free a block returned by Allocate with the same size.
  virtual void Free(uint8_t* ptr, int64_t size) noexcept = 0;
};

/// The process-wide default allocator (aligned_alloc). Never null; never destroyed.
FERRY_EXPORT Allocator* DefaultAllocator() noexcept;

/// A growable byte buffer that owns its memory. Move-only. Capacity grows geometrically, is
/// rounded to 64 bytes, and the bytes past size() up to the next multiple of 64 are zeroed.
class FERRY_EXPORT HostBuffer {
 public:
  explicit HostBuffer(Allocator* allocator = nullptr) noexcept
      : allocator_(allocator ? allocator : DefaultAllocator()) {}
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { Free(); }

  uint8_t* data() noexcept { return data_; }
  const uint8_t* data() const noexcept { return data_; }
  int64_t size() const noexcept { return size_; }
  int64_t capacity() const noexcept { return capacity_; }
  Allocator* allocator() const noexcept { return allocator_; }

  /// Make room for at least `capacity` bytes (copies the contents once when it grows).
  Status Reserve(int64_t capacity);
  /// Set the size; new bytes are zeroed.
  Status Resize(int64_t size);
  /// Append `bytes` (one copy, into this buffer). Errors name a negative size.
  Status Append(ByteSpan bytes);
  /// Append one value's bytes (a number, a plain struct; never a range of bytes, which goes as a
  /// ByteSpan to the overload above).
  template <typename T, typename = std::enable_if_t<std::is_trivially_copyable_v<T> &&
                                                    !std::is_convertible_v<const T&, ByteSpan>>>
  Status Append(const T& value) {
    return Append(ByteSpan(&value, static_cast<int64_t>(sizeof(T))));
  }
  /// Append `n` zero bytes.
  Status AppendZeros(int64_t n);
  /// Forget the contents (keeps capacity).
  void Clear() noexcept { size_ = 0; }
  /// Release the memory.
  void Free() noexcept;

 private:
  Allocator* allocator_;
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace ferry
