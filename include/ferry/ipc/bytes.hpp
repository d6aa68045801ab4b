// SharedBytes: read-only bytes plus the reference that keeps them alive. The IPC decoder's arrays
// point into these bytes and hold the reference, which is how reading stays zero-copy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ferry/format/result.hpp"

namespace ferry::ipc {

/// A span of read-only bytes and a shared owner. Copying one copies the reference, never the
/// bytes. An empty `owner` means the caller guarantees the bytes outlive every array made from
/// them (see Borrow).
struct SharedBytes {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  std::shared_ptr<const void> owner;

  /// Bytes the caller keeps alive for as long as any array read from them lives. No copy.
  static SharedBytes Borrow(const void* data, int64_t size);
  /// An owned copy of `size` bytes (one allocation and one copy, explicitly asked for).
  static Result<SharedBytes> Copy(const void* data, int64_t size);
  /// Map a whole file read-only (mmap, MAP_PRIVATE). The mapping lives as long as any copy of the
  /// result or any array read from it. Errors name the path and the system's reason.
  static Result<SharedBytes> MapFile(const std::string& path);
  /// The bytes [offset, offset + length), sharing the owner. The caller checks the range.
  SharedBytes Slice(int64_t offset, int64_t length) const {
    return SharedBytes{data + offset, length, owner};
  }
};

}  // namespace ferry::ipc
