// UTF-8 validation for string arrays.
#pragma once

#include <cstdint>

namespace ferry::internal {

/// Whether [data, data + size) is well-formed UTF-8 (no overlongs, surrogates or code points
/// above U+10FFFF, no truncated sequence). ASCII runs are checked 16 bytes at a time.
bool ValidateUtf8(const uint8_t* data, int64_t size) noexcept;

/// Whether `byte` continues a multi-byte sequence (so a string may not start there).
inline bool IsUtf8Continuation(uint8_t byte) noexcept { return (byte & 0xC0) == 0x80; }

}  // namespace ferry::internal
