/* ferry's C surface: Arrow IPC streams and files (docs/ipc.md).
 * One part of ferry/capi/ferry.h, which states the conventions every part follows; it may be
 * included alone. */
#ifndef FERRY_CAPI_IPC_H
#define FERRY_CAPI_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/capi/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Arrow IPC ----------------------------------------------------------------------------- */

/** IPC output format. */
enum FerryIpcFormat { FERRY_IPC_FORMAT_STREAM = 0, FERRY_IPC_FORMAT_FILE = 1 };

/** IPC body compression. */
enum FerryIpcCompression {
  FERRY_IPC_COMPRESSION_NONE = 0,
  FERRY_IPC_COMPRESSION_LZ4_FRAME = 1,
  FERRY_IPC_COMPRESSION_ZSTD = 2
};

/** How to read untrusted IPC input: the validation level run on every batch (a
 * FERRY_VALIDATION_LEVEL_*) and the most bytes decompression may allocate per message (0 keeps
 * the default of 4 GiB). */
struct FerryIpcReadOptions {
  int32_t validation;
  int64_t max_decompressed_bytes;
};

/** How to write: a FerryIpcFormat, a FerryIpcCompression, the codec level (0: default), the
 * body alignment (8 or 64; 0 means 8), big_endian (non-zero: write big-endian data, each
 * multi-byte buffer a swapped copy) and emit_dictionary_deltas (non-zero: a dictionary that grows
 * by appending goes as a delta of its new values, not a replacement). */
struct FerryIpcWriteOptions {
  int32_t format;
  int32_t compression;
  int32_t compression_level;
  int32_t alignment;
  int32_t big_endian;
  int32_t emit_dictionary_deltas;
};

/** Read an IPC file or stream from `path` (memory-mapped; the format is chosen from the magic)
 * as a stream of struct arrays pointing into the mapping. `options` may be NULL. */
FERRY_EXPORT FerryErrorCode FerryIpcReadPath(const char* path,
                                             const struct FerryIpcReadOptions* options,
                                             struct ArrowArrayStream* out,
                                             struct FerryError* error);

/** Read IPC bytes in place (stream or file format, chosen from the magic): no copy. `release`
 * (may be NULL) is called with `private_data` once the stream and every array read from it are
 * released; on failure it is called before returning. */
FERRY_EXPORT FerryErrorCode FerryIpcReadBuffer(const uint8_t* data, int64_t size,
                                               void (*release)(void* private_data),
                                               void* private_data,
                                               const struct FerryIpcReadOptions* options,
                                               struct ArrowArrayStream* out,
                                               struct FerryError* error);

/** Write every batch of `stream` (struct arrays) to `path`. The stream is consumed (released).
 * `options` may be NULL (stream format, uncompressed, 8-byte alignment). */
FERRY_EXPORT FerryErrorCode FerryIpcWritePath(struct ArrowArrayStream* stream, const char* path,
                                              const struct FerryIpcWriteOptions* options,
                                              struct FerryError* error);

/** Write every batch of `stream` into memory; `out` receives the bytes, in host memory that
 * belongs to the caller until `out->release(out)`. */
FERRY_EXPORT FerryErrorCode FerryIpcWriteBuffer(struct ArrowArrayStream* stream,
                                                const struct FerryIpcWriteOptions* options,
                                                struct FerryBuffer* out, struct FerryError* error);

/** An IPC file opened for random access (opaque). */
struct FerryIpcFileReader;

/** Open the file format at `path` (memory-mapped); reads the footer, schema and dictionaries. */
FERRY_EXPORT FerryErrorCode FerryIpcFileReaderOpen(const char* path,
                                                   const struct FerryIpcReadOptions* options,
                                                   struct FerryIpcFileReader** out,
                                                   struct FerryError* error);
/** Number of record batches in the file. */
FERRY_EXPORT int64_t FerryIpcFileReaderNumRecordBatches(const struct FerryIpcFileReader* reader);
/** A deep copy of the file's schema. */
FERRY_EXPORT FerryErrorCode FerryIpcFileReaderSchema(const struct FerryIpcFileReader* reader,
                                                     struct ArrowSchema* out,
                                                     struct FerryError* error);
/** Decode record batch `i` (0-based) as a struct array. */
FERRY_EXPORT FerryErrorCode FerryIpcFileReaderRead(const struct FerryIpcFileReader* reader,
                                                   int64_t i, struct ArrowArray* out,
                                                   struct FerryError* error);
/** Close the reader; arrays already read stay valid. */
FERRY_EXPORT void FerryIpcFileReaderRelease(struct FerryIpcFileReader* reader);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_CAPI_IPC_H */
