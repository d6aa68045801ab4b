// Stream and file readers over SharedBytes.
#include "ferry/ipc/reader.hpp"

#include <cstring>

#include "ferry/format/stream.hpp"
#include "ipc/decoder_state.hpp"

namespace ferry::ipc {

namespace {

constexpr char kMagic[6] = {'A', 'R', 'R', 'O', 'W', '1'};
// Leading magic padded to 8, and the trailer: int32 footer length + magic.
constexpr int64_t kLeading = 8;
constexpr int64_t kTrailer = 10;

struct StreamState {
  Decoder decoder;
  SharedBytes bytes;
  int64_t pos = 0;
};

// Feed the decoder until it queues a record batch or the input ends.
Result<std::optional<UniqueArray>> NextBatch(StreamState& s) {
  while (true) {
    while (std::optional<DecodedMessage> m = s.decoder.Next()) {
      if (m->kind == MessageKind::kRecordBatch)
        return std::optional<UniqueArray>(std::move(m->batch));
      if (m->kind == MessageKind::kEndOfStream) return std::optional<UniqueArray>();
    }
    if (s.decoder.finished()) return std::optional<UniqueArray>();
    if (s.pos == s.bytes.size) {
      if (s.decoder.between_messages()) return std::optional<UniqueArray>();
      return Status::Invalid(
          "the stream is truncated inside message " + std::to_string(s.decoder.messages_decoded()) +
          " (" + std::to_string(s.decoder.next_required_size()) + " more bytes were needed)");
    }
    const int64_t n = std::min(s.decoder.next_required_size(), s.bytes.size - s.pos);
    FERRY_RETURN_NOT_OK(s.decoder.Consume(s.bytes.Slice(s.pos, n)));
    s.pos += n;
  }
}

struct Block {
  int64_t offset;
  int32_t metadata_length;
  int64_t body_length;
};

}  // namespace

Result<UniqueArrayStream> ReadStream(SharedBytes bytes, ReadOptions options) {
  auto state =
      std::make_shared<StreamState>(StreamState{Decoder(std::move(options)), std::move(bytes), 0});
  // Decode up to the schema now, so a bad or missing schema fails here.
  while (state->decoder.schema() == nullptr) {
    if (state->pos == state->bytes.size || state->decoder.finished()) {
      return Status::Invalid("the stream ends before its Schema message (" +
                             std::to_string(state->bytes.size) + " bytes)");
    }
    const int64_t n = std::min(state->decoder.next_required_size(), state->bytes.size - state->pos);
    FERRY_RETURN_NOT_OK(state->decoder.Consume(state->bytes.Slice(state->pos, n)));
    state->pos += n;
  }
  FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, state->decoder.ExportSchema());
  return MakeArrayStream(std::move(schema), [state]() { return NextBatch(*state); });
}

// ---- FileReader --------------------------------------------------------------------------------

struct FileReader::Impl {
  SharedBytes file;
  Decoder decoder;
  HostBuffer footer_storage;
  const fb::Footer* footer = nullptr;
  int64_t footer_start = 0;
  std::vector<Block> dictionaries;
  std::vector<Block> batches;
  Metadata metadata;

  Decoder::Impl& d() { return *decoder.impl_; }
  const Decoder::Impl& d() const { return *decoder.impl_; }

  // Locate and verify the message of a block; returns the message and its body.
  Result<std::pair<const fb::Message*, SharedBytes>> ReadBlock(const Block& b,
                                                               const std::string& label,
                                                               HostBuffer* storage) const {
    int64_t end = 0;
    if (b.offset < kLeading || b.offset % 8 != 0 || b.metadata_length < 8 || b.body_length < 0 ||
        __builtin_add_overflow(b.offset, static_cast<int64_t>(b.metadata_length), &end) ||
        __builtin_add_overflow(end, b.body_length, &end) || end > footer_start) {
      return Status::Invalid(label + ": the block (offset " + std::to_string(b.offset) +
                             ", metadata " + std::to_string(b.metadata_length) + ", body " +
                             std::to_string(b.body_length) + ") lies outside the file's " +
                             std::to_string(footer_start) + " bytes of messages");
    }
    const uint8_t* p = file.data + b.offset;
    int64_t prefix = 4;
    int32_t length = internal::LoadInt32LE(p);
    if (length == -1) {
      prefix = 8;
      length = internal::LoadInt32LE(p + 4);
    }
    if (length <= 0 || length > b.metadata_length - prefix) {
      return Status::Invalid(label + ": the message length " + std::to_string(length) +
                             " does not fit the block's " + std::to_string(b.metadata_length) +
                             " metadata bytes");
    }
    FERRY_ASSIGN_OR_RAISE(const fb::Message* m,
                          d().VerifyMessage(p + prefix, length, storage, d().index));
    if (m->body_length() < 0 || m->body_length() > b.body_length) {
      return Status::Invalid(label + ": the message's body length " +
                             std::to_string(m->body_length()) + " exceeds the block's " +
                             std::to_string(b.body_length));
    }
    return std::make_pair(m, file.Slice(b.offset + b.metadata_length, m->body_length()));
  }
};

FileReader::FileReader() : impl_(std::make_unique<Impl>()) {}
FileReader::~FileReader() = default;
FileReader::FileReader(FileReader&&) noexcept = default;
FileReader& FileReader::operator=(FileReader&&) noexcept = default;

Result<FileReader> FileReader::Open(SharedBytes file, const ReadOptions& options) {
  FileReader reader;
  Impl& r = *reader.impl_;
  r.file = std::move(file);
  r.decoder = Decoder(options);
  r.d().file_mode = true;
  const int64_t size = r.file.size;
  if (size < kLeading + kTrailer) {
    return Status::Invalid("the file has " + std::to_string(size) +
                           " bytes, too few for the Arrow file format");
  }
  if (std::memcmp(r.file.data, kMagic, 6) != 0) {
    return Status::Invalid("the file does not start with the ARROW1 magic");
  }
  if (std::memcmp(r.file.data + size - 6, kMagic, 6) != 0) {
    return Status::Invalid("the file does not end with the ARROW1 magic (truncated?)");
  }
  const int32_t footer_length = internal::LoadInt32LE(r.file.data + size - kTrailer);
  if (footer_length <= 0 || footer_length > size - kLeading - kTrailer) {
    return Status::Invalid("the footer length " + std::to_string(footer_length) +
                           " does not fit the file's " + std::to_string(size) + " bytes");
  }
  r.footer_start = size - kTrailer - footer_length;
  FERRY_RETURN_NOT_OK(r.footer_storage.Append({r.file.data + r.footer_start, footer_length}));
  flatbuffers::Verifier::Options vo;
  vo.max_depth = static_cast<flatbuffers::uoffset_t>(std::max(options.max_flatbuffer_depth, 1));
  vo.max_tables = static_cast<flatbuffers::uoffset_t>(std::max(options.max_flatbuffer_tables, 1));
  flatbuffers::Verifier verifier(r.footer_storage.data(), static_cast<size_t>(footer_length), vo);
  if (!fb::VerifyFooterBuffer(verifier)) {
    return Status::Invalid("the footer (" + std::to_string(footer_length) + " bytes at offset " +
                           std::to_string(r.footer_start) + ") is not a valid Footer flatbuffer");
  }
  r.footer = fb::GetFooter(r.footer_storage.data());
  if (r.footer->schema() == nullptr) return Status::Invalid("the footer has no schema");
  FERRY_RETURN_NOT_OK(internal::CheckAligned8(r.footer->dictionaries(), r.footer_storage.data(),
                                              [] { return "the footer's dictionaries vector"; }));
  FERRY_RETURN_NOT_OK(internal::CheckAligned8(r.footer->record_batches(), r.footer_storage.data(),
                                              [] { return "the footer's recordBatches vector"; }));
  fb::MetadataVersion version = r.footer->version();
  if (version < fb::MetadataVersion::V4) {
    // Writers before 1.0 left the footer's version unset: take the schema message's.
    HostBuffer first;
    const Block schema_block{
        kLeading, static_cast<int32_t>(std::min<int64_t>(r.footer_start - kLeading, INT32_MAX)), 0};
    Result<std::pair<const fb::Message*, SharedBytes>> m =
        r.ReadBlock(schema_block, "the schema message", &first);
    if (m.ok()) version = m->first->version();
  }
  {
    Status st = r.d().HandleSchema(r.footer->schema(), version, 0);
    if (!st.ok()) return Status(st.code(), "footer: " + st.message());
  }
  r.metadata = internal::MetadataFromFlatbuffer(r.footer->custom_metadata());
  auto blocks = [](const flatbuffers::Vector<const fb::Block*>* v, std::vector<Block>* out) {
    if (v == nullptr) return;
    for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i) {
      const fb::Block* b = v->Get(i);
      out->push_back(Block{b->offset(), b->meta_data_length(), b->body_length()});
    }
  };
  blocks(r.footer->dictionaries(), &r.dictionaries);
  blocks(r.footer->record_batches(), &r.batches);
  HostBuffer storage;
  for (size_t i = 0; i < r.dictionaries.size(); ++i) {
    const std::string label = "dictionary block " + std::to_string(i);
    FERRY_ASSIGN_OR_RAISE(auto found, r.ReadBlock(r.dictionaries[i], label, &storage));
    if (found.first->header_type() != fb::MessageHeader::DictionaryBatch) {
      return Status::Invalid(label + ": the message is not a DictionaryBatch");
    }
    r.d().index = static_cast<int64_t>(i) + 1;
    Status st = r.d().HandleMessage(found.first, found.second);
    if (!st.ok()) return st.WithContext(label);
  }
  r.d().events.clear();
  return reader;
}

const ArrowSchema* FileReader::schema() const noexcept { return impl_->decoder.schema(); }
MetadataVersion FileReader::version() const noexcept { return impl_->decoder.version(); }
int64_t FileReader::num_record_batches() const noexcept {
  return static_cast<int64_t>(impl_->batches.size());
}
int64_t FileReader::num_dictionaries() const noexcept {
  return static_cast<int64_t>(impl_->dictionaries.size());
}
const Metadata& FileReader::metadata() const noexcept { return impl_->metadata; }

Result<FileReader::BlockInfo> FileReader::RecordBatchInfo(int64_t i) const {
  if (i < 0 || i >= num_record_batches()) {
    return Status::OutOfRange("record batch " + std::to_string(i) + " is outside 0.." +
                              std::to_string(num_record_batches() - 1));
  }
  const Block& b = impl_->batches[static_cast<size_t>(i)];
  HostBuffer storage;
  FERRY_ASSIGN_OR_RAISE(auto found,
                        impl_->ReadBlock(b, "record batch " + std::to_string(i), &storage));
  const fb::RecordBatch* batch = found.first->header_as_RecordBatch();
  if (batch == nullptr) {
    return Status::Invalid("record batch " + std::to_string(i) + ": not a RecordBatch message");
  }
  return BlockInfo{b.offset, b.metadata_length, b.body_length, batch->length(),
                   internal::CompressionName(batch->compression())};
}

Result<UniqueArray> FileReader::ReadRecordBatch(int64_t i) const {
  if (i < 0 || i >= num_record_batches()) {
    return Status::OutOfRange("record batch " + std::to_string(i) + " is outside 0.." +
                              std::to_string(num_record_batches() - 1));
  }
  const std::string label = "record batch " + std::to_string(i);
  HostBuffer storage;
  FERRY_ASSIGN_OR_RAISE(auto found,
                        impl_->ReadBlock(impl_->batches[static_cast<size_t>(i)], label, &storage));
  if (found.first->header_type() != fb::MessageHeader::RecordBatch) {
    return Status::Invalid(label + ": the message is not a RecordBatch");
  }
  Status version = impl_->d().CheckVersion(found.first->version(), i);
  if (!version.ok()) return version.WithContext(label);
  return impl_->d().DecodeBatch(found.first->header_as_RecordBatch(), found.second,
                                internal::MessageLabel(i, std::nullopt, "record batch"), nullptr);
}

Result<UniqueArrayStream> FileReader::ToStream(FileReader reader) {
  FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, reader.impl_->decoder.ExportSchema());
  auto shared = std::make_shared<FileReader>(std::move(reader));
  auto next = std::make_shared<int64_t>(0);
  return MakeArrayStream(std::move(schema), [shared, next]() -> Result<std::optional<UniqueArray>> {
    if (*next >= shared->num_record_batches()) {
      return std::optional<UniqueArray>();
    }
    FERRY_ASSIGN_OR_RAISE(UniqueArray batch, shared->ReadRecordBatch((*next)++));
    return std::optional<UniqueArray>(std::move(batch));
  });
}

Result<UniqueArrayStream> ReadPath(const std::string& path, ReadOptions options) {
  FERRY_ASSIGN_OR_RAISE(SharedBytes bytes, SharedBytes::MapFile(path));
  if (bytes.size >= 6 && std::memcmp(bytes.data, kMagic, 6) == 0) {
    Result<FileReader> reader = FileReader::Open(std::move(bytes), options);
    if (!reader.ok()) {
      return Status(reader.status().code(), "\"" + path + "\": " + reader.status().message());
    }
    return FileReader::ToStream(std::move(*reader));
  }
  Result<UniqueArrayStream> stream = ReadStream(std::move(bytes), std::move(options));
  if (!stream.ok()) {
    return Status(stream.status().code(), "\"" + path + "\": " + stream.status().message());
  }
  return stream;
}

}  // namespace ferry::ipc
