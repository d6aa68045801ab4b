// Body buffer compression: LZ4 frames and ZSTD, one buffer at a time, as the IPC format frames
// them (an int64 little-endian uncompressed length, -1 for bytes stored raw, then the bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "ferry/core/host_buffer.hpp"
#include "ferry/core/result.hpp"

namespace ferry::ipc::internal {

enum class Codec : int8_t { kNone = -1, kLz4Frame = 0, kZstd = 1 };

/// "LZ4_FRAME", "ZSTD" or "none".
const char* CodecName(Codec codec) noexcept;

/// Decompress one framed buffer into `out` (allocated here, exactly the advertised length).
/// Returns false in `*raw` and fills `out` when it was compressed; sets `*raw` when the frame
/// says the bytes are stored uncompressed (then `out` is untouched and the caller points at
/// `frame + 8`). `budget` is decremented by the bytes allocated and fails the call when the
/// advertised length exceeds it.
Status Decompress(Codec codec, const uint8_t* frame, int64_t frame_size, HostBuffer* out, bool* raw,
                  int64_t* budget);

/// Compress `size` bytes into a framed buffer appended to `out`. Incompressible input is stored
/// raw (length -1) so the output is never larger than size + 8.
Status Compress(Codec codec, const uint8_t* data, int64_t size, int level, HostBuffer* out);

}  // namespace ferry::ipc::internal
