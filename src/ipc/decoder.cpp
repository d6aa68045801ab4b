// The push decoder: stream framing, message verification, and schema and batch handling
// (dictionaries are in decoder_dictionary.cpp).
#include "ferry/ipc/decoder.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ferry/core/keep_alive.hpp"
#include "ferry/format/schema.hpp"
#include "ipc/decoder_state.hpp"
#include "ipc/loaded_validation.hpp"

namespace ferry::ipc {

namespace {

constexpr int32_t kContinuation = -1;  // 0xFFFFFFFF

// Resets a reused LoadedColumns on every way out, so that it keeps no body alive.
struct ResetAtExit {
  internal::LoadedColumns& loaded;
  ~ResetAtExit() { loaded.Reset(); }
};

}  // namespace

// ---- Decoder::Impl -----------------------------------------------------------------------------

Result<internal::DictionaryRef> Decoder::Impl::Lookup(int64_t id) const {
  auto it = dictionaries.find(id);
  if (it == dictionaries.end()) {
    return Status::Invalid("dictionary id " + std::to_string(id) +
                           " is used before any DictionaryBatch sent it");
  }
  return internal::DictionaryRef{it->second->get(), it->second};
}

Status Decoder::Impl::CheckVersion(fb::MetadataVersion version, int64_t i) const {
  if (version < fb::MetadataVersion::V4) {
    return Status::NotSupported(Label(i) + ": metadata version V" +
                                std::to_string(static_cast<int>(version) + 1) +
                                " is too old (ferry reads V4 and V5)");
  }
  if (version > fb::MetadataVersion::V5) {
    return Status::NotSupported(Label(i) + ": unknown metadata version " +
                                std::to_string(static_cast<int>(version)) +
                                " (ferry reads V4 and V5)");
  }
  if (schema && version != schema->version) {
    return Status::Invalid(
        Label(i) + ": metadata version V" + std::to_string(static_cast<int>(version) + 1) +
        " differs from the schema's V" + std::to_string(static_cast<int>(schema->version) + 1));
  }
  return Status::OK();
}

Result<const fb::Message*> Decoder::Impl::VerifyMessage(const uint8_t* data, int64_t size,
                                                        HostBuffer* storage, int64_t i,
                                                        internal::VerifiedShape* shape) const {
  if (size > options.max_metadata_bytes) {
    return Status::Invalid(Label(i) + ": metadata of " + std::to_string(size) +
                           " bytes exceeds the limit of " +
                           std::to_string(options.max_metadata_bytes));
  }
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0 || data != storage->data()) {
    // Flatbuffers reads fields in place: give it 8-aligned bytes (metadata is small).
    storage->Clear();
    FERRY_RETURN_NOT_OK(storage->Append({data, size}));
    data = storage->data();
  }
  if (shape != nullptr && shape->Matches(data, static_cast<size_t>(size))) {
    return fb::GetMessage(data);
  }
  flatbuffers::Verifier::Options vo;
  vo.max_depth = static_cast<flatbuffers::uoffset_t>(std::max(options.max_flatbuffer_depth, 1));
  vo.max_tables = static_cast<flatbuffers::uoffset_t>(std::max(options.max_flatbuffer_tables, 1));
  flatbuffers::Verifier verifier(data, static_cast<size_t>(size), vo);
  if (size < 8 || !fb::VerifyMessageBuffer(verifier)) {
    return Status::Invalid(Label(i) + ": the metadata (" + std::to_string(size) +
                           " bytes) is not a valid Message flatbuffer");
  }
  const fb::Message* message = fb::GetMessage(data);
  // Two things flatbuffers' verifier lets through: a header union whose type is set and whose
  // table is absent, and vectors of 64-bit structs that start only 4-aligned.
  if (message->header_type() != fb::MessageHeader::NONE && message->header() == nullptr) {
    return Status::Invalid(Label(i) + ": the message says its header is a " +
                           internal::HeaderName(message->header_type()) + " but carries none");
  }
  const fb::RecordBatch* batch = message->header_as_RecordBatch();
  if (const fb::DictionaryBatch* db = message->header_as_DictionaryBatch()) batch = db->data();
  if (batch != nullptr) {
    const auto where = [&](const char* vector) {
      return [this, i, vector] { return Label(i) + ": the metadata's " + vector; };
    };
    FERRY_RETURN_NOT_OK(internal::CheckAligned8(batch->nodes(), data, where("nodes vector")));
    FERRY_RETURN_NOT_OK(internal::CheckAligned8(batch->buffers(), data, where("buffers vector")));
    FERRY_RETURN_NOT_OK(internal::CheckAligned8(batch->variadic_buffer_counts(), data,
                                                where("variadicBufferCounts vector")));
  }
  if (shape != nullptr) shape->Remember(data, static_cast<size_t>(size), message);
  return message;
}

Status Decoder::Impl::HandleSchema(const fb::Schema* s, fb::MetadataVersion version, int64_t i) {
  if (schema) return Status::Invalid(Label(i) + ": a second Schema message");
  FERRY_RETURN_NOT_OK(CheckVersion(version, i));
  Result<internal::StreamSchema> parsed = internal::SchemaFromFlatbuffer(s, version);
  if (!parsed.ok()) {
    return Status(parsed.status().code(), Label(i) + " (schema): " + parsed.status().message());
  }
  schema = std::move(*parsed);
  return Project(i);
}

Result<UniqueArray> Decoder::Impl::DecodeBatch(const fb::RecordBatch* batch,
                                               const SharedBytes& body,
                                               const internal::MessageLabel& label,
                                               int64_t* decompressed) const {
  const ArrowSchema* all = schema->root.get();
  const std::span<const ArrowSchema* const> columns(all->children,
                                                    static_cast<size_t>(all->n_children));
  FERRY_RETURN_NOT_OK(
      CheckDeviceBody(batch != nullptr && batch->compression() != nullptr, body, label));
  // A stream's batches reuse one LoadedColumns and one view; a second thread decoding at the
  // same time (a file read at random) makes its own.
  std::unique_lock lock(batch_view_mutex, std::try_to_lock);
  internal::LoadedColumns own;
  internal::LoadedColumns& loaded = lock.owns_lock() ? batch_scratch : own;
  const ResetAtExit reset{loaded};
  auto lookup = [this](int64_t key) { return Lookup(key); };
  const ValidationLevel level = Validation();
  const bool one_pass = level == ValidationLevel::kDefault && internal::QuickValidation();
  UniqueArray out;
  FERRY_RETURN_NOT_OK(internal::LoadBatch(columns, *schema, batch, body, lookup,
                                          options.max_decompressed_bytes, label, selected, one_pass,
                                          &out, &loaded));
  if (decompressed != nullptr) *decompressed += loaded.decompressed_bytes;
  const ArrowSchema* root = OutSchema();
  if (level == ValidationLevel::kNone) return out;
  if (loaded.passes_default) return out;  // the loader made the one-pass check as it went
  if (!lock.owns_lock()) {
    FERRY_RETURN_NOT_OK(
        internal::ValidateLoaded(root, out.get(), loaded.buffer_sizes, true, level, label));
    return out;
  }
  if (!batch_view || batch_view_schema != root) {
    FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(root));
    batch_view.emplace(std::move(view));
    batch_view_schema = root;
  }
  FERRY_RETURN_NOT_OK(
      internal::ValidateLoaded(*batch_view, out.get(), loaded.buffer_sizes, true, level, label));
  return out;
}

Status Decoder::Impl::CheckDeviceBody(bool compressed, const SharedBytes& body,
                                      const internal::MessageLabel& label) const {
  if (!options.body_on_device) return Status::OK();
  const char* why = nullptr;
  if (compressed) {
    why = "is compressed";
  } else if (schema->big_endian != (std::endian::native == std::endian::big)) {
    why = "needs its bytes swapped (a big-endian stream)";
  } else if (reinterpret_cast<uintptr_t>(body.data) % 8 != 0) {
    why = "is not 8-byte aligned";
  }
  if (why == nullptr) return Status::OK();
  return Status::NotSupported(label.str() + ": the body " + why +
                              ", but it is device memory the host must not read");
}

ValidationLevel Decoder::Impl::Validation() const {
  return options.body_on_device ? ValidationLevel::kNone : options.validation;
}

Status Decoder::Impl::HandleMessage(const fb::Message* m, const SharedBytes& body) {
  const int64_t i = index;
  FERRY_RETURN_NOT_OK(CheckVersion(m->version(), i));
  Metadata custom = internal::MetadataFromFlatbuffer(m->custom_metadata());
  switch (m->header_type()) {
    case fb::MessageHeader::Schema: {
      FERRY_RETURN_NOT_OK(HandleSchema(m->header_as_Schema(), m->version(), i));
      DecodedMessage event;
      event.kind = MessageKind::kSchema;
      event.index = i;
      event.custom_metadata = std::move(custom);
      events.push_back(std::move(event));
      break;
    }
    case fb::MessageHeader::DictionaryBatch:
      if (!schema) return Status::Invalid(Label(i) + ": a DictionaryBatch before the Schema");
      FERRY_RETURN_NOT_OK(
          HandleDictionary(m->header_as_DictionaryBatch(), body, i, std::move(custom)));
      break;
    case fb::MessageHeader::RecordBatch: {
      if (!schema) return Status::Invalid(Label(i) + ": a RecordBatch before the Schema");
      const fb::RecordBatch* rb = m->header_as_RecordBatch();
      FERRY_ASSIGN_OR_RAISE(UniqueArray batch,
                            DecodeBatch(rb, body, internal::MessageLabel(i), &copied));
      DecodedMessage& event = events.emplace_back();  // made in place: no move per batch
      event.kind = MessageKind::kRecordBatch;
      event.index = i;
      event.custom_metadata = std::move(custom);
      event.batch = std::move(batch);
      event.body_length = m->body_length();
      event.compression = internal::CompressionName(rb->compression());
      break;
    }
    default:
      return Status::NotSupported(Label(i) + ": " + internal::HeaderName(m->header_type()) +
                                  " messages are not supported");
  }
  ++index;
  return Status::OK();
}

void Decoder::Impl::EndOfStream() {
  state = State::kDone;
  need = 0;
  DecodedMessage event;  // kind kEndOfStream
  event.index = index;
  events.push_back(std::move(event));
}

Status Decoder::Impl::Feed(const SharedBytes& chunk) {
  switch (state) {
    case State::kPrefix: {
      const int32_t v = internal::LoadInt32LE(chunk.data);
      if (v == kContinuation) {
        state = State::kLength;
        need = 4;
      } else if (v == 0) {
        EndOfStream();
      } else if (v < 0) {
        return Status::Invalid(Label(index) + ": negative metadata length " + std::to_string(v));
      } else {  // the pre-1.0 prefix: a bare length
        state = State::kMetadata;
        need = v;
      }
      return Status::OK();
    }
    case State::kLength: {
      const int32_t v = internal::LoadInt32LE(chunk.data);
      if (v == 0) {
        EndOfStream();
      } else if (v < 0) {
        return Status::Invalid(Label(index) + ": negative metadata length " + std::to_string(v));
      } else if (v > options.max_metadata_bytes) {
        return Status::Invalid(Label(index) + ": metadata length " + std::to_string(v) +
                               " exceeds the limit of " +
                               std::to_string(options.max_metadata_bytes));
      } else {
        state = State::kMetadata;
        need = v;
      }
      return Status::OK();
    }
    case State::kMetadata: {
      FERRY_ASSIGN_OR_RAISE(message,
                            VerifyMessage(chunk.data, chunk.size, &metadata, index, &shape));
      const int64_t body_length = message->body_length();
      if (body_length < 0) {
        return Status::Invalid(Label(index) + ": negative body length " +
                               std::to_string(body_length));
      }
      if (body_length == 0) {
        state = State::kPrefix;
        need = 4;
        return HandleMessage(message, SharedBytes{});
      }
      state = State::kBody;
      need = body_length;
      return Status::OK();
    }
    case State::kBody:
      state = State::kPrefix;
      need = 4;
      return HandleMessage(message, chunk);
    case State::kDone:
      return Status::OK();
  }
  return Status::OK();
}

// ---- Decoder -----------------------------------------------------------------------------------

Decoder::Decoder(ReadOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Decoder::~Decoder() = default;
Decoder::Decoder(Decoder&&) noexcept = default;
Decoder& Decoder::operator=(Decoder&&) noexcept = default;

Status Decoder::Consume(const SharedBytes& bytes) {
  Impl& d = *impl_;
  d.inspected = false;  // the stream's framing rewrites `metadata`
  if (!d.failed.ok()) return d.failed;
  if (bytes.size < 0 || (bytes.size > 0 && bytes.data == nullptr)) {
    return Status::Invalid("Decoder::Consume: NULL data or negative size");
  }
  int64_t pos = 0;
  while (pos < bytes.size && d.state != Impl::State::kDone) {
    const int64_t left = bytes.size - pos;
    if (d.pending.size() == 0 && left >= d.need) {
      // The whole piece is here: reference it in place.
      const int64_t n = d.need;
      Status st = d.Feed(bytes.Slice(pos, n));
      pos += n;
      if (!st.ok()) return d.Fail(st);
      continue;
    }
    const int64_t take = std::min(left, d.need - d.pending.size());
    // Grows with the bytes that actually arrive, so a lying length cannot allocate ahead.
    Status st = d.pending.Append({bytes.data + pos, take});
    if (!st.ok()) return d.Fail(st);
    pos += take;
    if (d.pending.size() == d.need) {
      auto owned = std::make_shared<HostBuffer>(std::move(d.pending));
      d.pending = HostBuffer();
      if (d.state == Impl::State::kBody) d.copied += owned->size();
      SharedBytes piece{owned->data(), owned->size(), owned};
      st = d.Feed(piece);
      if (!st.ok()) return d.Fail(st);
    }
  }
  return Status::OK();
}

Result<const fb::Message*> Decoder::Impl::Begin(const uint8_t* data, int64_t size) {
  if (!failed.ok()) return failed;
  // The copy Inspect verified, handed back: decoded as it is.
  const bool verified = inspected && data == metadata.data() && size == metadata.size();
  inspected = false;
  if (verified) return fb::GetMessage(metadata.data());
  if (data == nullptr || size <= 0) return Fail(Status::Invalid(Label(index) + ": empty metadata"));
  Result<const fb::Message*> m = VerifyMessage(data, size, &metadata, index, &shape);
  if (!m.ok()) return Fail(m.status());
  return m;
}

Status Decoder::ConsumeMessage(ByteSpan metadata, const SharedBytes& body) {
  Impl& d = *impl_;
  Result<const fb::Message*> m = d.Begin(metadata.data, metadata.size);
  if (!m.ok()) return m.status();
  const int64_t body_length = (*m)->body_length();
  if (body_length < 0 || body_length > body.size) {
    return d.Fail(Status::Invalid(d.Label(d.index) + ": the metadata announces a body of " +
                                  std::to_string(body_length) + " bytes but " +
                                  std::to_string(body.size) + " arrived"));
  }
  Status st = d.HandleMessage(*m, body.Slice(0, body_length));
  if (!st.ok()) return d.Fail(st);
  return Status::OK();
}

int64_t Decoder::next_required_size() const noexcept {
  return impl_->state == Impl::State::kDone ? 0 : impl_->need - impl_->pending.size();
}

std::optional<DecodedMessage> Decoder::Next() {
  if (impl_->events.empty()) return std::nullopt;
  return impl_->events.pop_front();
}

const ArrowSchema* Decoder::schema() const noexcept {
  return impl_->schema ? impl_->OutSchema() : nullptr;
}

Result<UniqueSchema> Decoder::ExportSchema() const {
  if (!impl_->schema) return Status::Invalid("no schema has been decoded yet");
  return CopySchema(impl_->OutSchema());
}

MetadataVersion Decoder::version() const noexcept {
  return impl_->schema ? static_cast<MetadataVersion>(impl_->schema->version)
                       : MetadataVersion::kV5;
}

bool Decoder::between_messages() const noexcept {
  return impl_->state == Impl::State::kDone ||
         (impl_->state == Impl::State::kPrefix && impl_->pending.size() == 0);
}

bool Decoder::finished() const noexcept {
  return impl_->state == Impl::State::kDone && impl_->failed.ok();
}

int64_t Decoder::messages_decoded() const noexcept { return impl_->index; }
int64_t Decoder::bytes_copied() const noexcept { return impl_->copied; }

}  // namespace ferry::ipc
