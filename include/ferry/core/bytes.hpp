// Byte spans and shared bytes: the currency of every layer that moves bytes without looking at
// them (sinks, decoders, transports). A ByteSpan borrows; SharedBytes carries the owner that keeps
// its bytes alive, which is how reading stays zero-copy.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

namespace ferry {

/// A borrowed run of bytes: the caller keeps them alive for as long as the callee may read them
/// (for a write or send, until the call returns). Costs nothing. Made from any pointer and a
/// size, or from any contiguous range of uint8_t (std::span, std::vector, std::array); held as
/// bytes, like SharedBytes. The one type of borrowed bytes in ferry's public headers.
struct FERRY_EXPORT ByteSpan {
  const uint8_t* data = nullptr;
  int64_t size = 0;

  ByteSpan() = default;
  ByteSpan(const void* bytes, int64_t n) noexcept
      : data(static_cast<const uint8_t*>(bytes)), size(n) {}
  /// Borrow a std::span<const uint8_t>, or anything that converts to one (a vector or array of
  /// uint8_t). No copy; the range must outlive the ByteSpan, as with std::span.
  template <typename Range, typename = std::enable_if_t<
                                std::is_convertible_v<const Range&, std::span<const uint8_t>>>>
  ByteSpan(const Range& range) noexcept : ByteSpan(std::span<const uint8_t>(range)) {}
  ByteSpan(std::span<const uint8_t> span) noexcept
      : data(span.data()), size(static_cast<int64_t>(span.size())) {}
  /// The bytes as a range: a ByteSpan converts to a std::span<const uint8_t> (the same bytes,
  /// borrowed) and goes wherever a contiguous range of bytes is read.
  const uint8_t* begin() const noexcept { return data; }
  const uint8_t* end() const noexcept { return data + size; }
};

/// A span of read-only bytes and a shared owner. Copying one copies the reference, never the
/// bytes. An empty `owner` means the caller guarantees the bytes outlive every array made from
/// them (see Borrow). Passes as a ByteSpan wherever one is asked for (borrowing, for the call).
struct FERRY_EXPORT SharedBytes {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  std::shared_ptr<const void> owner;

  /// Bytes the caller keeps alive for as long as any array read from them lives. No copy.
  static SharedBytes Borrow(ByteSpan bytes);
  /// An owned copy of the bytes (one allocation and one copy, explicitly asked for). Errors
  /// name a negative size.
  static Result<SharedBytes> Copy(ByteSpan bytes);
  /// Gather `pieces` into one owned, 64-byte aligned allocation (one copy). Errors name a NULL
  /// piece or a negative size.
  static Result<SharedBytes> Gather(std::span<const ByteSpan> pieces);
  /// Map a whole file read-only (mmap, MAP_PRIVATE). The mapping lives as long as any copy of the
  /// result or any array read from it. Errors name the path and the system's reason.
  static Result<SharedBytes> MapFile(const std::string& path);
  /// The bytes [offset, offset + length), sharing the owner. The caller checks the range.
  SharedBytes Slice(int64_t offset, int64_t length) const {
    return SharedBytes{data + offset, length, owner};
  }
  /// The bytes, borrowed (the owner is not shared: the SharedBytes must outlive the ByteSpan).
  operator ByteSpan() const noexcept { return {data, size}; }
  /// The bytes as a std::span, borrowed as the ByteSpan is.
  explicit operator std::span<const uint8_t>() const noexcept {
    return {data, static_cast<size_t>(size)};
  }
};

/// Shared bytes that a peer can map too: `fd` is a descriptor (a file, a memfd) whose offset 0
/// is `data`, kept open by `owner` as long as the bytes. A served file's bytes
/// (dipc::DatasetFile) and the memory a transport lends as a region are these.
struct FERRY_EXPORT LendableBytes : SharedBytes {
  int fd = -1;
};

}  // namespace ferry
