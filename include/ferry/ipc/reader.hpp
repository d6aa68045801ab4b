// Readers over whole IPC inputs: the stream format as an ArrowArrayStream, and the file format
// with random access to its record batches. Both read zero-copy from SharedBytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/bytes.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/metadata.hpp"
#include "ferry/ipc/decoder.hpp"

namespace ferry::ipc {

/// Read an IPC stream lazily as an ArrowArrayStream of struct arrays (one per record batch). The
/// schema is decoded here, so a bad schema fails now; batches are decoded on get_next. Arrays
/// point into `bytes` and keep its owner alive; nothing is copied unless the body is compressed.
FERRY_EXPORT Result<UniqueArrayStream> ReadStream(SharedBytes bytes, ReadOptions options = {});

/// A reader of the IPC file format ("ARROW1" magic, footer, blocks). Open reads the footer, the
/// schema and every dictionary; ReadRecordBatch(i) decodes batch i alone. Arrays point into the
/// file's bytes (e.g. a mapping from SharedBytes::MapFile) and keep them alive. Move-only;
/// ReadRecordBatch may be called from several threads at once.
class FERRY_EXPORT FileReader {
 public:
  /// Check the magic, verify the footer, decode the schema and the dictionaries. Errors name the
  /// block and message.
  static Result<FileReader> Open(SharedBytes file, const ReadOptions& options = {});
  ~FileReader();
  FileReader(FileReader&&) noexcept;
  FileReader& operator=(FileReader&&) noexcept;

  /// The schema (a struct whose children are the columns), owned by the reader.
  const ArrowSchema* schema() const noexcept;
  MetadataVersion version() const noexcept;
  int64_t num_record_batches() const noexcept;
  int64_t num_dictionaries() const noexcept;
  /// The footer's custom metadata.
  const Metadata& metadata() const noexcept;
  /// Where record batch i lies and what its metadata says, without decoding its body.
  struct BlockInfo {
    int64_t offset = 0;
    int64_t metadata_length = 0;
    int64_t body_length = 0;
    int64_t rows = 0;
    /// "" when uncompressed, else "LZ4_FRAME" or "ZSTD".
    std::string compression;
  };
  Result<BlockInfo> RecordBatchInfo(int64_t i) const;
  /// Decode record batch i (0-based) as a struct array.
  Result<UniqueArray> ReadRecordBatch(int64_t i) const;
  /// Every batch in order, as a stream (the reader is moved into it).
  static Result<UniqueArrayStream> ToStream(FileReader reader);

 private:
  FileReader();
  struct FERRY_HIDDEN Impl;
  std::unique_ptr<Impl> impl_;
};

/// Read a whole file, choosing the format from its first bytes: "ARROW1" is the file format,
/// anything else is read as a stream. The file is memory-mapped.
FERRY_EXPORT Result<UniqueArrayStream> ReadPath(const std::string& path, ReadOptions options = {});

}  // namespace ferry::ipc
