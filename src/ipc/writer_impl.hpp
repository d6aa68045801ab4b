// The state the stream and file writers share (StreamWriter::Impl, which FileWriter holds too):
// the sink, the schema, the dictionaries sent, and the room each batch reuses. Its message
// framing and batches are written in writer.cpp, its dictionaries in writer_dictionaries.cpp.
#pragma once

#include <bit>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "ferry/device/device_array.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/ipc/writer.hpp"
#include "ipc/assembler.hpp"
#include "ipc/batch_message.hpp"
#include "ipc/sent_dictionaries.hpp"

namespace ferry::ipc {

/// What a StreamWriter or FileWriter owns: one per writer, moved with it, used by one thread.
struct StreamWriter::Impl {
  Sink* sink = nullptr;
  MessageSink* message_sink = nullptr;
  WriteOptions options;
  UniqueSchema schema;
  std::optional<ArrayView> view;
  bool file = false;
  bool closed = false;
  std::vector<int64_t> ids;
  std::map<int64_t, internal::SentDictionary> sent;
  std::vector<fb::Block> dictionary_blocks;
  std::vector<fb::Block> batch_blocks;
  WriteStats stats;
  bool device_copy = false;  // the batch being written is a host copy of a device batch
  flatbuffers::FlatBufferBuilder batch_builder;  // WriteBatch's, reused
  internal::BatchMessages batch_messages;        // WriteBatch's, most batches'
  std::vector<ByteSpan> message_pieces;          // WriteMessage's, reused
  internal::AssembledBody batch_body;            // WriteBatch's, reused: its vectors keep room
  std::vector<BodyBuffer> message_buffers;       // SendMessage's, reused
  UniqueDeviceArray held_batch;                  // the last WriteHeldBatch's (sent[].layout)

  /// WriteHeldBatches' group: messages framed but not written yet, in order. Each message's
  /// prefix, flatbuffer and padding are copied into `bytes` (their piece's data stays NULL until
  /// the flush, since `bytes` moves as it grows); its body's pieces point into its batch, kept in
  /// `batches`, and into `owned`, the copies its layout made. Emptied by FlushGathered.
  struct Gathered {
    bool active = false;  // WriteMessage gathers instead of writing
    std::vector<uint8_t> bytes;
    std::vector<ByteSpan> pieces;
    std::list<HostBuffer> owned;
    std::vector<UniqueDeviceArray> batches;
    int64_t size = 0;  // the bytes gathered, ahead of the sink's position
    // The file's blocks and the stats before the first message gathered: a write that fails
    // leaves them as they were, as a batch whose write failed does.
    size_t blocks_before = 0;
    WriteStats stats_before;
  };
  Gathered gathered;

  static ByteSpan Built(flatbuffers::FlatBufferBuilder& b) {
    return {b.GetBufferPointer(), static_cast<int64_t>(b.GetSize())};
  }
  // The assembler's codec for a compression option.
  static internal::Codec CodecOf(Compression c) {
    switch (c) {
      case Compression::kLz4Frame:
        return internal::Codec::kLz4Frame;
      case Compression::kZstd:
        return internal::Codec::kZstd;
      default:
        return internal::Codec::kNone;
    }
  }
  bool Swapping() const { return options.big_endian != (std::endian::native == std::endian::big); }

  Status Write(std::vector<ByteSpan>& pieces) {
    const int64_t before = sink->position();
    FERRY_RETURN_NOT_OK(sink->Write(pieces));
    stats.bytes_written += sink->position() - before;
    return Status::OK();
  }

  // Frame one message (continuation, padded length, flatbuffer, padding) and its body.
  Status WriteMessage(ByteSpan flatbuffer, const internal::AssembledBody* body,
                      std::vector<fb::Block>* blocks);

  // The dissociated path: metadata and body go to the message sink apart, unframed.
  Status SendMessage(ByteSpan flatbuffer, const internal::AssembledBody* body);

  // The schema message, first in every stream (and after a file's magic).
  Status WriteSchema();

  // Give `d` its body hash, and with deltas its values' hash, where it has none yet.
  Status Hash(internal::SentDictionary* d) const {
    return internal::HashHeld(d, options.alignment, Swapping());
  }
  Status ValuesOf(internal::SentDictionary* d) const {
    return internal::HashHeldValues(d, options.emit_dictionary_deltas);
  }
  // Before the batches that `sent` points into go (internal::ForgetHeld).
  void ForgetHeld() {
    internal::ForgetHeld(&sent, options.alignment, Swapping(), options.emit_dictionary_deltas);
  }

  // Once closed: the held batch goes, and nothing is compared with it again.
  void DropHeld() {
    for (auto& [id, d] : sent) {
      d.layout.clear();
      d.held = nullptr;
    }
    held_batch.reset();
  }

  // Write the dictionaries of `root` that differ from those sent. `held`: the batch stays the
  // writer's until the next is written (WriteHeldBatch), so its dictionaries' layouts may stand
  // for their values. A schema without dictionaries costs no walk (writer_dictionaries.cpp).
  Status WriteDictionaries(const ArrowArray* root, bool held) {
    if (ids.empty()) return Status::OK();
    return WriteChangedDictionaries(root, held);
  }
  Status WriteChangedDictionaries(const ArrowArray* root, bool held);

  // A host batch's dictionaries, then its RecordBatch message, checked as `check` says. `held`:
  // as for WriteDictionaries.
  Status WriteBatch(const ArrowArray* batch, const Metadata& custom, BatchCheck check,
                    bool held = false);

  // A batch on any device: a device batch is copied to the host (on `stream`) and written.
  Status WriteDeviceBatch(const ArrowDeviceArray* batch, void* stream, BatchCheck check);

  // Write `batch` and hold it until the next is written: see StreamWriter::WriteHeldBatch.
  Status WriteHeldBatch(UniqueDeviceArray batch, void* stream, BatchCheck check);

  // Write `batches` in as few sink writes as they allow: see StreamWriter::WriteHeldBatches
  // (writer_gathered.cpp).
  Status WriteHeldBatches(std::span<UniqueDeviceArray> batches, void* stream, BatchCheck check);

  // Write what WriteMessage gathered in one Sink::Write, then release its batches and copies.
  Status FlushGathered();

  // Write `batch`, which its caller keeps unchanged until the writer goes: see
  // StreamWriter::WriteKeptBatch.
  Status WriteKeptBatch(const ArrowDeviceArray* batch, void* stream, BatchCheck check);

  // Every batch of `stream`, whose schema must be the writer's; the stream is released.
  Status WriteStream(ArrowArrayStream* stream);

  // The end-of-stream marker (to the message sink, its own end).
  Status WriteEndOfStream();

  // Check the options and take a copy of the schema; nothing is written yet.
  Status Init(Sink* s, const ArrowSchema* in, WriteOptions o);
};

}  // namespace ferry::ipc
