// Byte spans and shared bytes: the currency of every layer that moves bytes without looking at
// them (sinks, decoders, transports). A ByteSpan borrows; SharedBytes carries the owner that keeps
// its bytes alive, which is how reading stays zero-copy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

namespace ferry {

/// A borrowed run of bytes: the caller keeps them alive for as long as the callee may read them
/// (for a write or send, until the call returns). Costs nothing. Made from any pointer, held as
/// bytes, like SharedBytes.
struct FERRY_EXPORT ByteSpan {
  const uint8_t* data = nullptr;
  int64_t size = 0;

  ByteSpan() = default;
  ByteSpan(const void* bytes, int64_t n) noexcept
      : data(static_cast<const uint8_t*>(bytes)), size(n) {}
};

/// A span of read-only bytes and a shared owner. Copying one copies the reference, never the
/// bytes. An empty `owner` means the caller guarantees the bytes outlive every array made from
/// them (see Borrow).
struct FERRY_EXPORT SharedBytes {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  std::shared_ptr<const void> owner;

  /// Bytes the caller keeps alive for as long as any array read from them lives. No copy.
  static SharedBytes Borrow(const void* data, int64_t size);
  /// An owned copy of `size` bytes (one allocation and one copy, explicitly asked for).
  static Result<SharedBytes> Copy(const void* data, int64_t size);
  /// Gather `pieces` into one owned, 64-byte aligned allocation (one copy). Errors name a NULL
  /// piece or a negative size.
  static Result<SharedBytes> Gather(const ByteSpan* pieces, size_t count);
  /// Map a whole file read-only (mmap, MAP_PRIVATE). The mapping lives as long as any copy of the
  /// result or any array read from it. Errors name the path and the system's reason.
  static Result<SharedBytes> MapFile(const std::string& path);
  /// The bytes [offset, offset + length), sharing the owner. The caller checks the range.
  SharedBytes Slice(int64_t offset, int64_t length) const {
    return SharedBytes{data + offset, length, owner};
  }
};

/// Shared bytes that a peer can map too: `fd` is a descriptor (a file, a memfd) whose offset 0
/// is `data`, kept open by `owner` as long as the bytes. A served file's bytes
/// (dipc::DatasetFile) and the memory a transport lends as a region are these.
struct FERRY_EXPORT LendableBytes : SharedBytes {
  int fd = -1;
};

}  // namespace ferry
