// Owning, 64-byte aligned buffers over a pluggable allocator.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "ferry/format/result.hpp"

namespace ferry {

/// Where Buffers get their memory. Implementations must return 64-byte aligned blocks and be
/// thread-safe. The default allocator uses aligned heap memory.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// A block of `size` bytes (size may be 0), 64-byte aligned, or OutOfMemory.
  virtual Result<uint8_t*> Allocate(int64_t size) = 0;
  /// Free a block returned by Allocate with the same size.
  virtual void Free(uint8_t* ptr, int64_t size) noexcept = 0;
};

/// The process-wide default allocator (aligned_alloc). Never null; never destroyed.
Allocator* DefaultAllocator() noexcept;

/// A growable byte buffer that owns its memory. Move-only. Capacity grows geometrically, is
/// rounded to 64 bytes, and the bytes past size() up to the next multiple of 64 are zeroed.
class Buffer {
 public:
  explicit Buffer(Allocator* allocator = nullptr) noexcept
      : allocator_(allocator ? allocator : DefaultAllocator()) {}
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { Free(); }

  uint8_t* data() noexcept { return data_; }
  const uint8_t* data() const noexcept { return data_; }
  int64_t size() const noexcept { return size_; }
  int64_t capacity() const noexcept { return capacity_; }
  Allocator* allocator() const noexcept { return allocator_; }

  /// Make room for at least `capacity` bytes (copies the contents once when it grows).
  Status Reserve(int64_t capacity);
  /// Set the size; new bytes are zeroed.
  Status Resize(int64_t size);
  /// Append `n` bytes.
  Status Append(const void* bytes, int64_t n);
  /// Append one value's bytes.
  template <typename T>
  Status Append(const T& value) {
    return Append(&value, static_cast<int64_t>(sizeof(T)));
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

/// Appends bits (least-significant first) into an owned Buffer and counts the unset ones.
class BitmapBuilder {
 public:
  explicit BitmapBuilder(Allocator* allocator = nullptr) : bytes_(allocator) {}
  /// Append `n` copies of `bit`.
  Status Append(bool bit, int64_t n = 1);
  int64_t length() const noexcept { return length_; }
  int64_t false_count() const noexcept { return false_count_; }
  Buffer& buffer() noexcept { return bytes_; }
  /// Move the bytes out and start empty.
  Buffer Finish();

 private:
  Buffer bytes_;
  int64_t length_ = 0;
  int64_t false_count_ = 0;
};

}  // namespace ferry
