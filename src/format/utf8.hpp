// UTF-8 validation for string arrays.
#pragma once

#include <cstdint>

namespace ferry::internal {

/// Whether [data, data + size) is well-formed UTF-8 (no overlongs, surrogates or code points
/// above U+10FFFF, no truncated sequence). With AVX2 (checked once, at run time) 32 bytes at a
/// time through to the end, whatever the mix of characters; else ValidateUtf8Scalar.
bool ValidateUtf8(const uint8_t* data, int64_t size) noexcept;

/// The same, byte by byte after 16-byte ASCII runs, stopping at the first error: any CPU.
bool ValidateUtf8Scalar(const uint8_t* data, int64_t size) noexcept;

/// What ScanUtf8 finds in a range of bytes: whether they are UTF-8, and whether every one is
/// ASCII (then none continues a character, so every string that starts among them starts on a
/// character boundary).
struct Utf8Scan {
  bool valid = true;
  bool ascii = true;
};

/// ValidateUtf8, also telling whether the bytes are all ASCII, at no extra cost.
Utf8Scan ScanUtf8(const uint8_t* data, int64_t size) noexcept;

/// Whether int32 offsets offsets[0..n] (unaligned bytes) never go down: the order check of
/// ScanStringOffsets alone, with no read of the data, for strings whose bytes are all ASCII and
/// for binary.
bool OffsetsInOrder(const uint8_t* offsets, int64_t n) noexcept;

/// Over int32 string offsets offsets[0..n] (unaligned bytes), for full validation: sets
/// `*out_of_order` when an offset is below the one before it, and `*split` when an offset below
/// `last` points at a byte that continues a character (read at the offset clamped into
/// [first, last - 1]: always inside the data, whatever the offsets say). `first` and `last` must
/// lie in `data`, with first < last. With AVX2, eight offsets at a time; flags are only set.
void ScanStringOffsets(const uint8_t* offsets, int64_t n, const uint8_t* data, int32_t first,
                       int32_t last, bool* out_of_order, bool* split) noexcept;

/// Whether `byte` continues a multi-byte sequence (so a string may not start there).
inline bool IsUtf8Continuation(uint8_t byte) noexcept { return (byte & 0xC0) == 0x80; }

}  // namespace ferry::internal
