// Stream and file writers (writer_impl.hpp): message framing, batches, and the file footer.
#include "ferry/ipc/writer.hpp"

#include <bit>
#include <cstring>
#include <string_view>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/schema.hpp"
#include "ipc/assembler.hpp"
#include "ipc/batch_message.hpp"
#include "ipc/loaded_validation.hpp"
#include "ipc/schema_flatbuffer.hpp"
#include "ipc/writer_impl.hpp"

namespace ferry::ipc {

namespace {

alignas(8) const uint8_t kZeros[64] = {};
const uint8_t kFileMagic[8] = {'A', 'R', 'R', 'O', 'W', '1', 0, 0};
// The end-of-stream marker: continuation, then a zero length.
const uint8_t kEndOfStream[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};

void StoreInt32LE(uint8_t* p, int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  p[0] = static_cast<uint8_t>(u);
  p[1] = static_cast<uint8_t>(u >> 8);
  p[2] = static_cast<uint8_t>(u >> 16);
  p[3] = static_cast<uint8_t>(u >> 24);
}

}  // namespace

// Frame one message (continuation, padded length, flatbuffer, padding) and its body.
Status StreamWriter::Impl::WriteMessage(ByteSpan flatbuffer, const internal::AssembledBody* body,
                                        std::vector<fb::Block>* blocks) {
  if (message_sink != nullptr) return SendMessage(flatbuffer, body);
  // Where the message starts: after what is gathered and not written yet.
  const int64_t start = sink->position() + gathered.size;
  const int64_t size = flatbuffer.size;
  const int64_t align = options.alignment;
  const int64_t end = (start + 8 + size + align - 1) / align * align;
  const int64_t padded = end - start - 8;
  uint8_t prefix[8];
  StoreInt32LE(prefix, -1);
  StoreInt32LE(prefix + 4, static_cast<int32_t>(padded));
  if (gathered.active) {
    if (gathered.pieces.empty()) {
      gathered.blocks_before = batch_blocks.size();
      gathered.stats_before = stats;
    }
    // The framing is the writer's memory, reused for the next message: copied. The body's
    // pieces stay where they are until the flush.
    std::vector<uint8_t>& bytes = gathered.bytes;
    bytes.insert(bytes.end(), prefix, prefix + 8);
    bytes.insert(bytes.end(), flatbuffer.data, flatbuffer.data + size);
    bytes.resize(bytes.size() + static_cast<size_t>(padded - size), 0);
    gathered.pieces.push_back(ByteSpan{nullptr, 8 + padded});
    if (body != nullptr) {
      gathered.pieces.insert(gathered.pieces.end(), body->pieces.begin(), body->pieces.end());
    }
    gathered.size += 8 + padded + (body != nullptr ? body->body_length : 0);
  } else {
    std::vector<ByteSpan>& pieces = message_pieces;  // kept: its capacity serves every message
    pieces.clear();
    pieces.reserve(3 + (body ? body->pieces.size() : 0));
    pieces.push_back(ByteSpan{prefix, 8});
    pieces.push_back(flatbuffer);
    if (padded > size) pieces.push_back(ByteSpan{kZeros, padded - size});
    if (body != nullptr) pieces.insert(pieces.end(), body->pieces.begin(), body->pieces.end());
    FERRY_RETURN_NOT_OK(Write(pieces));
  }
  if (blocks != nullptr) {
    blocks->emplace_back(start, static_cast<int32_t>(8 + padded), body ? body->body_length : 0);
  }
  ++stats.messages;
  return Status::OK();
}

// The dissociated path: metadata and body go to the message sink apart, unframed.
Status StreamWriter::Impl::SendMessage(ByteSpan flatbuffer, const internal::AssembledBody* body) {
  EncodedMessage m;
  m.metadata = flatbuffer;
  std::vector<BodyBuffer>& buffers = message_buffers;  // kept: its capacity serves every message
  buffers.clear();
  if (body != nullptr) {
    buffers.reserve(body->buffers.size());
    for (size_t i = 0; i < body->buffers.size(); ++i) {
      buffers.push_back(BodyBuffer{body->buffers[i].offset(), body->buffers[i].length(),
                                   static_cast<const uint8_t*>(body->buffer_data[i])});
    }
    m.body = body->pieces;
    m.body_length = body->body_length;
    m.buffers = buffers;
    m.has_body = true;
    m.in_place = body->copied == 0 && !device_copy;
  }
  FERRY_RETURN_NOT_OK(message_sink->WriteMessage(m));
  stats.bytes_written += m.metadata.size + m.body_length;
  ++stats.messages;
  return Status::OK();
}

Status StreamWriter::Impl::WriteSchema() {
  flatbuffers::FlatBufferBuilder b;
  FERRY_ASSIGN_OR_RAISE(auto s,
                        internal::SchemaToFlatbuffer(b, schema.get(), &ids, options.big_endian));
  b.Finish(fb::CreateMessage(b, fb::MetadataVersion::V5, fb::MessageHeader::Schema, s.Union(), 0));
  return WriteMessage(Built(b), nullptr, nullptr);
}

Status StreamWriter::Impl::WriteBatch(const ArrowArray* batch, const Metadata& custom,
                                      BatchCheck check, bool held) {
  if (closed) return Status::Invalid("the writer is closed");
  if (batch == nullptr || batch->release == nullptr) {
    return Status::Invalid("the batch is NULL or released");
  }
  // Structure and O(1) offset checks first: the layout below trusts them. A batch its caller
  // checked (a decoder's) skips them: for small batches they are a tenth of the write. Most
  // batches pass the one-pass check; the view decides the rest and names what is wrong.
  if (check == BatchCheck::kByWriter &&
      !(internal::QuickValidation() && internal::PassesDefaultQuickly(*view, batch))) {
    Status st = view->SetArray(batch);
    if (st.ok()) st = view->Validate(ValidationLevel::kDefault);
    view->Reset();
    if (!st.ok()) {
      return Status(st.code(), "batch " + std::to_string(stats.record_batches) +
                                   " does not match the schema or is invalid: " + st.message());
    }
  }
  FERRY_RETURN_NOT_OK(WriteDictionaries(batch, held));
  // One body for every batch: cleared, it keeps its vectors' room. What it owns (rebased
  // offsets, compressed buffers) goes once the batch is written, as a body of its own would.
  internal::AssembledBody& body = batch_body;
  FERRY_RETURN_NOT_OK(internal::AssembleBatchInto(
      schema.get(), batch, options.alignment, CodecOf(options.compression),
      options.compression_level, Swapping(), &*view, &body));
  ByteSpan message;
  if (custom.empty() && options.compression == Compression::kNone) {
    message = batch_messages.Encode(body);  // most batches: patched, not built
  } else {
    // One builder for these: cleared, it keeps its memory (a batch allocates none).
    flatbuffers::FlatBufferBuilder& b = batch_builder;
    b.Clear();
    auto table = internal::BatchTable(b, body, options.compression);
    std::vector<flatbuffers::Offset<fb::KeyValue>> pairs;
    for (const auto& [k, v] : custom) {
      pairs.push_back(fb::CreateKeyValue(b, b.CreateString(k), b.CreateString(v)));
    }
    b.Finish(fb::CreateMessage(b, fb::MetadataVersion::V5, fb::MessageHeader::RecordBatch,
                               table.Union(), body.body_length,
                               pairs.empty() ? 0 : b.CreateVector(pairs)));
    message = Built(b);
  }
  const Status written = WriteMessage(message, &body, &batch_blocks);
  if (gathered.active) {
    gathered.owned.splice(gathered.owned.end(), body.owned);  // its pieces are not written yet
  } else {
    body.owned.clear();
  }
  FERRY_RETURN_NOT_OK(written);
  stats.bytes_copied += body.copied;
  ++stats.record_batches;
  return Status::OK();
}

Status StreamWriter::Impl::WriteDeviceBatch(const ArrowDeviceArray* batch, void* stream,
                                            BatchCheck check) {
  if (batch == nullptr || batch->array.release == nullptr) {
    return Status::Invalid("the device batch is NULL or released");
  }
  if (batch->device_type == ARROW_DEVICE_CPU) return WriteBatch(&batch->array, {}, check);
  FERRY_ASSIGN_OR_RAISE(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  FERRY_RETURN_NOT_OK(stream ? view.SetArrayAsync(batch, stream) : view.SetArray(batch));
  Device* cpu = CpuDevice();
  FERRY_ASSIGN_OR_RAISE(UniqueDeviceArray host,
                        stream ? view.CopyAsync(*cpu, stream) : view.Copy(*cpu));
  device_copy = true;
  Status st = WriteBatch(&host->array, {}, check);
  device_copy = false;
  return st;
}

// Write `batch` and hold it until the next is written: see StreamWriter::WriteHeldBatch.
Status StreamWriter::Impl::WriteHeldBatch(UniqueDeviceArray batch, void* stream, BatchCheck check) {
  if (!batch.valid()) return Status::Invalid("the device batch is NULL or released");
  // A batch copied off its device is a copy of the writer's own, gone once written.
  const bool cpu = batch->device_type == ARROW_DEVICE_CPU;
  Status st = cpu ? WriteBatch(&batch->array, {}, check, /*held=*/true)
                  : WriteDeviceBatch(batch.get(), stream, check);
  if (!st.ok()) {
    ForgetHeld();  // while both batches are still there
    held_batch.reset();
    return st;
  }
  // The previous batch goes only now: its dictionaries' memory was compared while it was held.
  // A schema without dictionaries has nothing to compare, so its producer gets a batch back
  // as soon as it is written.
  held_batch = ids.empty() ? UniqueDeviceArray{} : std::move(batch);
  return Status::OK();
}

// Write `batch`, which its caller keeps unchanged until the writer goes: see
// StreamWriter::WriteKeptBatch.
Status StreamWriter::Impl::WriteKeptBatch(const ArrowDeviceArray* batch, void* stream,
                                          BatchCheck check) {
  if (batch == nullptr || batch->array.release == nullptr) {
    return Status::Invalid("the device batch is NULL or released");
  }
  const bool cpu = batch->device_type == ARROW_DEVICE_CPU;
  Status st = cpu ? WriteBatch(&batch->array, {}, check, /*held=*/true)
                  : WriteDeviceBatch(batch, stream, check);
  if (!st.ok()) ForgetHeld();
  // What the writer held is no longer what its dictionaries' memory is known from.
  held_batch.reset();
  return st;
}

Status StreamWriter::Impl::WriteStream(ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) {
    return Status::Invalid("the stream is NULL or released");
  }
  UniqueArrayStream owned(stream);
  UniqueSchema s;
  FERRY_RETURN_NOT_OK(
      StreamGetSchema(owned.get(), s.get()).WithContext("the stream's get_schema failed"));
  if (!internal::SameTypes(s.get(), schema.get())) {
    return Status::Invalid("the stream's schema differs from the writer's");
  }
  while (true) {
    UniqueArray a;
    FERRY_RETURN_NOT_OK(
        StreamGetNext(owned.get(), a.get()).WithContext("the stream's get_next failed"));
    if (!a.valid()) return Status::OK();
    UniqueDeviceArray held;
    FERRY_RETURN_NOT_OK(DeviceArrayInit(*CpuDevice(), held.get(), a.get(), nullptr));
    FERRY_RETURN_NOT_OK(WriteHeldBatch(std::move(held), nullptr, BatchCheck::kByWriter));
  }
}

Status StreamWriter::Impl::WriteEndOfStream() {
  if (message_sink != nullptr) return message_sink->WriteEndOfStream();
  std::vector<ByteSpan> pieces{ByteSpan{kEndOfStream, 8}};
  return Write(pieces);
}

Status StreamWriter::Impl::Init(Sink* s, const ArrowSchema* in, WriteOptions o) {
  if (s == nullptr && message_sink == nullptr) return Status::Invalid("the sink is NULL");
  if (o.alignment != 8 && o.alignment != 64) {
    return Status::Invalid("alignment must be 8 or 64, not " + std::to_string(o.alignment));
  }
  if (static_cast<int>(o.compression) < 0 || static_cast<int>(o.compression) > 2) {
    return Status::Invalid("unknown compression " +
                           std::to_string(static_cast<int>(o.compression)));
  }
  sink = s;
  options = std::move(o);
  FERRY_ASSIGN_OR_RAISE(schema, CopySchema(in));
  FERRY_ASSIGN_OR_RAISE(ArrayView v, ArrayView::Make(schema.get()));
  if (v.type().type != TypeId::kStruct) {
    return Status::Invalid("an IPC schema must be a struct (one child per column)");
  }
  view.emplace(std::move(v));
  return Status::OK();
}

// ---- StreamWriter ------------------------------------------------------------------------------

StreamWriter::StreamWriter() : impl_(std::make_unique<Impl>()) {}
StreamWriter::~StreamWriter() = default;
StreamWriter::StreamWriter(StreamWriter&&) noexcept = default;
StreamWriter& StreamWriter::operator=(StreamWriter&&) noexcept = default;

Result<StreamWriter> StreamWriter::Open(Sink* sink, const ArrowSchema* schema,
                                        WriteOptions options) {
  StreamWriter w;
  FERRY_RETURN_NOT_OK(w.impl_->Init(sink, schema, std::move(options)));
  FERRY_RETURN_NOT_OK(w.impl_->WriteSchema());
  return w;
}

Result<StreamWriter> StreamWriter::Open(MessageSink* sink, const ArrowSchema* schema,
                                        WriteOptions options) {
  if (sink == nullptr) return Status::Invalid("the message sink is NULL");
  StreamWriter w;
  w.impl_->message_sink = sink;
  FERRY_RETURN_NOT_OK(w.impl_->Init(nullptr, schema, std::move(options)));
  FERRY_RETURN_NOT_OK(w.impl_->WriteSchema());
  return w;
}

Status StreamWriter::WriteBatch(const ArrowArray* batch, const Metadata& custom_metadata,
                                BatchCheck check) {
  return impl_->WriteBatch(batch, custom_metadata, check);
}
Status StreamWriter::WriteDeviceBatch(const ArrowDeviceArray* batch, void* stream,
                                      BatchCheck check) {
  return impl_->WriteDeviceBatch(batch, stream, check);
}
Status StreamWriter::WriteHeldBatch(UniqueDeviceArray batch, void* stream, BatchCheck check) {
  return impl_->WriteHeldBatch(std::move(batch), stream, check);
}
Status StreamWriter::WriteHeldBatches(std::span<UniqueDeviceArray> batches, void* stream,
                                      BatchCheck check) {
  return impl_->WriteHeldBatches(batches, stream, check);
}
Status StreamWriter::WriteKeptBatch(const ArrowDeviceArray* batch, void* stream, BatchCheck check) {
  return impl_->WriteKeptBatch(batch, stream, check);
}
Status StreamWriter::WriteStream(ArrowArrayStream* stream) { return impl_->WriteStream(stream); }
Status StreamWriter::Close() {
  if (impl_->closed) return Status::OK();
  impl_->closed = true;
  impl_->DropHeld();
  return impl_->WriteEndOfStream();
}
const WriteStats& StreamWriter::stats() const noexcept { return impl_->stats; }

// ---- FileWriter --------------------------------------------------------------------------------

FileWriter::FileWriter() : impl_(std::make_unique<StreamWriter::Impl>()) {}
FileWriter::~FileWriter() = default;
FileWriter::FileWriter(FileWriter&&) noexcept = default;
FileWriter& FileWriter::operator=(FileWriter&&) noexcept = default;

Result<FileWriter> FileWriter::Open(Sink* sink, const ArrowSchema* schema, WriteOptions options) {
  FileWriter w;
  FERRY_RETURN_NOT_OK(w.impl_->Init(sink, schema, std::move(options)));
  w.impl_->file = true;
  std::vector<ByteSpan> magic{ByteSpan{kFileMagic, 8}};
  FERRY_RETURN_NOT_OK(w.impl_->Write(magic));
  FERRY_RETURN_NOT_OK(w.impl_->WriteSchema());
  return w;
}

Status FileWriter::WriteBatch(const ArrowArray* batch, const Metadata& custom_metadata,
                              BatchCheck check) {
  return impl_->WriteBatch(batch, custom_metadata, check);
}
Status FileWriter::WriteDeviceBatch(const ArrowDeviceArray* batch, void* stream, BatchCheck check) {
  return impl_->WriteDeviceBatch(batch, stream, check);
}
Status FileWriter::WriteHeldBatch(UniqueDeviceArray batch, void* stream, BatchCheck check) {
  return impl_->WriteHeldBatch(std::move(batch), stream, check);
}
Status FileWriter::WriteHeldBatches(std::span<UniqueDeviceArray> batches, void* stream,
                                    BatchCheck check) {
  return impl_->WriteHeldBatches(batches, stream, check);
}
Status FileWriter::WriteKeptBatch(const ArrowDeviceArray* batch, void* stream, BatchCheck check) {
  return impl_->WriteKeptBatch(batch, stream, check);
}
Status FileWriter::WriteStream(ArrowArrayStream* stream) { return impl_->WriteStream(stream); }

Status FileWriter::Close() {
  StreamWriter::Impl& w = *impl_;
  if (w.closed) return Status::OK();
  w.closed = true;
  w.DropHeld();
  FERRY_RETURN_NOT_OK(w.WriteEndOfStream());
  flatbuffers::FlatBufferBuilder b;
  std::vector<int64_t> ids;
  FERRY_ASSIGN_OR_RAISE(
      auto schema, internal::SchemaToFlatbuffer(b, w.schema.get(), &ids, w.options.big_endian));
  auto dictionaries = b.CreateVectorOfStructs(w.dictionary_blocks);
  auto batches = b.CreateVectorOfStructs(w.batch_blocks);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>> metadata = 0;
  if (!w.options.file_metadata.empty()) {
    std::vector<flatbuffers::Offset<fb::KeyValue>> pairs;
    for (const auto& [k, v] : w.options.file_metadata) {
      pairs.push_back(fb::CreateKeyValue(b, b.CreateString(k), b.CreateString(v)));
    }
    metadata = b.CreateVector(pairs);
  }
  b.Finish(fb::CreateFooter(b, fb::MetadataVersion::V5, schema, dictionaries, batches, metadata));
  uint8_t trailer[10];
  StoreInt32LE(trailer, static_cast<int32_t>(b.GetSize()));
  std::memcpy(trailer + 4, kFileMagic, 6);
  std::vector<ByteSpan> pieces{ByteSpan{b.GetBufferPointer(), static_cast<int64_t>(b.GetSize())},
                               ByteSpan{trailer, 10}};
  return w.Write(pieces);
}

const WriteStats& FileWriter::stats() const noexcept { return impl_->stats; }

Result<Compression> ParseCompression(std::string_view name) {
  if (name == "none") return Compression::kNone;
  if (name == "lz4" || name == "lz4_frame") return Compression::kLz4Frame;
  if (name == "zstd") return Compression::kZstd;
  std::string message = "unknown compression \"";
  message.append(name);
  message += "\" (none, lz4 or lz4_frame, zstd)";
  return Status::Invalid(message);
}

}  // namespace ferry::ipc
