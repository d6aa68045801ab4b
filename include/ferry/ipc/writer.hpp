// Writers of the IPC stream and file formats. Bodies go to the sink as a list of pieces that
// point at the arrays' own buffers: nothing is gathered or copied unless compression, a
// bit-shifted slice or rebased offsets need it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/format/metadata.hpp"
#include "ferry/ipc/sink.hpp"

namespace ferry::ipc {

/// Body compression, per buffer, as the IPC format defines it.
enum class Compression : int8_t { kNone = 0, kLz4Frame = 1, kZstd = 2 };

/// The one parser of compression names, which every face uses (the CLI's --compression, Python's
/// `compression=`): "none", "lz4" (also "lz4_frame", Arrow's name) or "zstd". Anything else is
/// EINVAL with a message that lists them.
[[nodiscard]] FERRY_EXPORT Result<Compression> ParseCompression(std::string_view name);

/// How to write. Plain values.
struct FERRY_EXPORT WriteOptions {
  Compression compression = Compression::kNone;
  /// Codec level; 0 picks the codec's default.
  int compression_level = 0;
  /// Padding of every body buffer and of each message's metadata: 8 (the specification's
  /// minimum) or 64 (for SIMD-friendly readers).
  int32_t alignment = 8;
  /// Write big-endian data (the schema says so and every multi-byte buffer is a swapped copy).
  /// For big-endian consumers and for testing readers; native order costs nothing.
  bool big_endian = false;
  /// Custom metadata of the file footer (file format only).
  Metadata file_metadata;
  /// When a dictionary grows by appending (its first values are those last sent), write only the
  /// new values as a delta DictionaryBatch (isDelta) instead of a replacement; files accept
  /// deltas but no replacements. Telling costs one JSON rendering of the changed dictionary.
  bool emit_dictionary_deltas = false;
};

/// Who checks a batch's structure before the writer lays it out. kByWriter: the writer, at
/// ValidationLevel::kDefault (O(columns), plus a read of each offsets buffer's ends). kByCaller:
/// the caller vouches that the batch was validated at kDefault or above against the writer's
/// schema, as a Decoder's and a Dissociated IPC client's batches are; the writer trusts its
/// offsets and lengths, so a batch that was not checked may make it read out of bounds.
enum class BatchCheck : int8_t { kByWriter = 0, kByCaller = 1 };

/// Counts a writer keeps.
struct FERRY_EXPORT WriteStats {
  int64_t messages = 0;
  int64_t record_batches = 0;
  int64_t dictionary_batches = 0;
  /// Of those, deltas (WriteOptions::emit_dictionary_deltas).
  int64_t dictionary_deltas = 0;
  /// Bytes handed to the sink.
  int64_t bytes_written = 0;
  /// Bytes the writer had to copy (bit-shifted or rebased slices; compression output).
  int64_t bytes_copied = 0;
};

/// Writes the stream format to a sink: the schema on Open, then one message per dictionary that
/// changed and per batch, then the end-of-stream marker on Close. The sink is borrowed and must
/// outlive the writer. Move-only.
class FERRY_EXPORT StreamWriter {
 public:
  static Result<StreamWriter> Open(Sink* sink, const ArrowSchema* schema,
                                   WriteOptions options = {});
  /// Write messages to a MessageSink, metadata and body apart (the dissociated protocol). The
  /// sink is borrowed and must outlive the writer.
  static Result<StreamWriter> Open(MessageSink* sink, const ArrowSchema* schema,
                                   WriteOptions options = {});
  ~StreamWriter();
  StreamWriter(StreamWriter&&) noexcept;
  StreamWriter& operator=(StreamWriter&&) noexcept;

  /// Write one batch: a struct array of the schema (no top-level nulls). Dictionaries that differ
  /// from the ones last sent go first, as replacements or (emit_dictionary_deltas) deltas. The
  /// batch is only read.
  [[nodiscard]] Status WriteBatch(const ArrowArray* batch, const Metadata& custom_metadata = {},
                                  BatchCheck check = BatchCheck::kByWriter);
  /// Write a batch that lives on any device. CPU batches are written in place; others are first
  /// copied to host memory through the device layer (one copy of the visible slice, ordered on
  /// `stream` when given, after the batch's sync event), then written.
  [[nodiscard]] Status WriteDeviceBatch(const ArrowDeviceArray* batch, void* stream = nullptr,
                                        BatchCheck check = BatchCheck::kByWriter);
  /// Write a batch the writer takes, and keeps until the next batch is written or the writer
  /// closes or goes (otherwise as WriteDeviceBatch); a schema without dictionaries has its batch
  /// released once written. Memory it holds cannot be freed and reused, so a dictionary at the
  /// memory of the one it sent last is that dictionary, unchanged as Arrow's arrays promise, and
  /// is not read again (as Arrow C++'s writer knows a dictionary object it sent): batches that
  /// share a dictionary cost O(its nodes) each, not a pass over its values.
  [[nodiscard]] Status WriteHeldBatch(UniqueDeviceArray batch, void* stream = nullptr,
                                      BatchCheck check = BatchCheck::kByWriter);
  /// Write batches the writer takes, in order, as WriteHeldBatch writes each, but in as few
  /// writes to the sink as they allow: host batches of a schema without dictionaries are framed
  /// one after the other and go out in one Sink::Write, each released once it has (a system call
  /// for a group, not one per batch). A failure still writes the batches before the one that
  /// failed; every batch of `batches` is taken (moved from) either way.
  [[nodiscard]] Status WriteHeldBatches(std::span<UniqueDeviceArray> batches,
                                        void* stream = nullptr,
                                        BatchCheck check = BatchCheck::kByWriter);
  /// Write a batch that its caller keeps, unchanged, until the writer goes (a dataset's batches
  /// that outlive the write): its dictionaries are known by their memory as WriteHeldBatch's
  /// are, without the writer taking it. Otherwise as WriteDeviceBatch.
  [[nodiscard]] Status WriteKeptBatch(const ArrowDeviceArray* batch, void* stream = nullptr,
                                      BatchCheck check = BatchCheck::kByWriter);
  /// Write every batch of a stream (whose schema must match) and leave the stream released.
  /// Each batch is held as WriteHeldBatch holds it.
  [[nodiscard]] Status WriteStream(ArrowArrayStream* stream);
  /// Write the end-of-stream marker. Further writes fail.
  [[nodiscard]] Status Close();
  const WriteStats& stats() const noexcept;

 private:
  friend class FileWriter;
  StreamWriter();
  struct FERRY_HIDDEN Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes the file format: magic, the stream messages, then the footer with every block on
/// Close. Dictionaries may not be replaced between batches (the format cannot); with
/// emit_dictionary_deltas they may grow by appending.
class FERRY_EXPORT FileWriter {
 public:
  static Result<FileWriter> Open(Sink* sink, const ArrowSchema* schema, WriteOptions options = {});
  ~FileWriter();
  FileWriter(FileWriter&&) noexcept;
  FileWriter& operator=(FileWriter&&) noexcept;

  [[nodiscard]] Status WriteBatch(const ArrowArray* batch, const Metadata& custom_metadata = {},
                                  BatchCheck check = BatchCheck::kByWriter);
  /// See StreamWriter::WriteDeviceBatch.
  [[nodiscard]] Status WriteDeviceBatch(const ArrowDeviceArray* batch, void* stream = nullptr,
                                        BatchCheck check = BatchCheck::kByWriter);
  /// See StreamWriter::WriteHeldBatch.
  [[nodiscard]] Status WriteHeldBatch(UniqueDeviceArray batch, void* stream = nullptr,
                                      BatchCheck check = BatchCheck::kByWriter);
  /// See StreamWriter::WriteHeldBatches.
  [[nodiscard]] Status WriteHeldBatches(std::span<UniqueDeviceArray> batches,
                                        void* stream = nullptr,
                                        BatchCheck check = BatchCheck::kByWriter);
  /// See StreamWriter::WriteKeptBatch.
  [[nodiscard]] Status WriteKeptBatch(const ArrowDeviceArray* batch, void* stream = nullptr,
                                      BatchCheck check = BatchCheck::kByWriter);
  [[nodiscard]] Status WriteStream(ArrowArrayStream* stream);
  /// Write the end-of-stream marker, the footer and the trailing magic.
  [[nodiscard]] Status Close();
  const WriteStats& stats() const noexcept;

 private:
  FileWriter();
  std::unique_ptr<StreamWriter::Impl> impl_;
};

}  // namespace ferry::ipc
