// LZ4 frame and ZSTD body compression.
#include "ipc/compression.hpp"

#include <lz4frame.h>
#include <zstd.h>

#include <bit>
#include <cstring>
#include <string>

namespace ferry::ipc::internal {

namespace {

int64_t LoadLength(const uint8_t* p) {
  int64_t v = 0;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big)
    v = static_cast<int64_t>(__builtin_bswap64(static_cast<uint64_t>(v)));
  return v;
}

void StoreLength(uint8_t* p, int64_t v) {
  if constexpr (std::endian::native == std::endian::big)
    v = static_cast<int64_t>(__builtin_bswap64(static_cast<uint64_t>(v)));
  std::memcpy(p, &v, 8);
}

Status Lz4Decompress(const uint8_t* src, int64_t n, uint8_t* dst, int64_t want) {
  LZ4F_dctx* ctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) {
    return Status::OutOfMemory("LZ4: cannot create a decompression context");
  }
  size_t produced = 0;
  size_t consumed = 0;
  Status st;
  // One frame per buffer; it may still come out in pieces, so loop until the input is used.
  while (consumed < static_cast<size_t>(n)) {
    size_t out_size = static_cast<size_t>(want) - produced;
    size_t in_size = static_cast<size_t>(n) - consumed;
    const size_t rc =
        LZ4F_decompress(ctx, dst + produced, &out_size, src + consumed, &in_size, nullptr);
    if (LZ4F_isError(rc)) {
      st = Status::Invalid(std::string("LZ4: ") + LZ4F_getErrorName(rc));
      break;
    }
    produced += out_size;
    consumed += in_size;
    if (rc == 0) break;  // frame complete
    if (in_size == 0 && out_size == 0) {
      st = Status::Invalid("LZ4: the frame decodes to more than the advertised " +
                           std::to_string(want) + " bytes");
      break;
    }
  }
  LZ4F_freeDecompressionContext(ctx);
  FERRY_RETURN_NOT_OK(st);
  if (produced != static_cast<size_t>(want)) {
    return Status::Invalid("LZ4: the frame decodes to " + std::to_string(produced) +
                           " bytes, not the advertised " + std::to_string(want));
  }
  return Status::OK();
}

Status ZstdDecompress(const uint8_t* src, int64_t n, uint8_t* dst, int64_t want) {
  const size_t rc = ZSTD_decompress(dst, static_cast<size_t>(want), src, static_cast<size_t>(n));
  if (ZSTD_isError(rc)) return Status::Invalid(std::string("ZSTD: ") + ZSTD_getErrorName(rc));
  if (rc != static_cast<size_t>(want)) {
    return Status::Invalid("ZSTD: the frame decodes to " + std::to_string(rc) +
                           " bytes, not the advertised " + std::to_string(want));
  }
  return Status::OK();
}

}  // namespace

const char* CodecName(Codec codec) noexcept {
  switch (codec) {
    case Codec::kLz4Frame:
      return "LZ4_FRAME";
    case Codec::kZstd:
      return "ZSTD";
    case Codec::kNone:
      return "none";
  }
  return "unknown";
}

Status Decompress(Codec codec, const uint8_t* frame, int64_t frame_size, HostBuffer* out, bool* raw,
                  int64_t* budget) {
  *raw = false;
  if (frame_size < 8) {
    return Status::Invalid("a compressed buffer of " + std::to_string(frame_size) +
                           " bytes has no room for its 8-byte length");
  }
  const int64_t want = LoadLength(frame);
  if (want == -1) {
    *raw = true;
    return Status::OK();
  }
  if (want < 0) {
    return Status::Invalid("a compressed buffer declares a negative length " +
                           std::to_string(want));
  }
  if (want > *budget) {
    return Status::Invalid("a compressed buffer declares " + std::to_string(want) +
                           " bytes, more than the " + std::to_string(*budget) +
                           " left of the decompression limit");
  }
  *budget -= want;
  FERRY_RETURN_NOT_OK(out->Resize(want));
  if (want == 0) return Status::OK();
  switch (codec) {
    case Codec::kLz4Frame:
      return Lz4Decompress(frame + 8, frame_size - 8, out->data(), want);
    case Codec::kZstd:
      return ZstdDecompress(frame + 8, frame_size - 8, out->data(), want);
    case Codec::kNone:
      break;
  }
  return Status::Invalid("buffer is framed as compressed but the batch has no codec");
}

Status Compress(Codec codec, const uint8_t* data, int64_t size, int level, HostBuffer* out) {
  const int64_t start = out->size();
  size_t bound = 0;
  if (codec == Codec::kLz4Frame) {
    bound = LZ4F_compressFrameBound(static_cast<size_t>(size), nullptr);
  } else if (codec == Codec::kZstd) {
    bound = ZSTD_compressBound(static_cast<size_t>(size));
  } else {
    return Status::Invalid("no codec to compress with");
  }
  FERRY_RETURN_NOT_OK(out->Resize(start + 8 + static_cast<int64_t>(bound)));
  uint8_t* dst = out->data() + start + 8;
  size_t written = 0;
  if (codec == Codec::kLz4Frame) {
    LZ4F_preferences_t prefs;
    std::memset(&prefs, 0, sizeof(prefs));
    prefs.compressionLevel = level;
    written = LZ4F_compressFrame(dst, bound, data, static_cast<size_t>(size), &prefs);
    if (LZ4F_isError(written)) {
      return Status::Invalid(std::string("LZ4: ") + LZ4F_getErrorName(written));
    }
  } else {
    written = ZSTD_compress(dst, bound, data, static_cast<size_t>(size), level);
    if (ZSTD_isError(written)) {
      return Status::Invalid(std::string("ZSTD: ") + ZSTD_getErrorName(written));
    }
  }
  if (static_cast<int64_t>(written) >= size) {
    // Not worth it: store the bytes as they are.
    StoreLength(out->data() + start, -1);
    if (size > 0) std::memcpy(out->data() + start + 8, data, static_cast<size_t>(size));
    return out->Resize(start + 8 + size);
  }
  StoreLength(out->data() + start, size);
  return out->Resize(start + 8 + static_cast<int64_t>(written));
}

}  // namespace ferry::ipc::internal
