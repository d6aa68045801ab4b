// Single messages looked at on their own (InspectMessage, MessageBodyLength), and the names and
// little-endian reads that the decoder and the file reader share.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ferry/ipc/decoder.hpp"
#include "ipc/decoder_state.hpp"

namespace ferry::ipc {

const char* internal::HeaderName(fb::MessageHeader h) {
  switch (h) {
    case fb::MessageHeader::Schema:
      return "Schema";
    case fb::MessageHeader::DictionaryBatch:
      return "DictionaryBatch";
    case fb::MessageHeader::RecordBatch:
      return "RecordBatch";
    case fb::MessageHeader::Tensor:
      return "Tensor";
    case fb::MessageHeader::SparseTensor:
      return "SparseTensor";
    default:
      return "unknown";
  }
}

std::string internal::CompressionName(const fb::BodyCompression* c) {
  if (c == nullptr) return {};  // most batches: no string made from a literal
  switch (c->codec()) {
    case fb::CompressionType::LZ4_FRAME:
      return "LZ4_FRAME";
    case fb::CompressionType::ZSTD:
      return "ZSTD";
    default:
      return "unknown";
  }
}

int32_t internal::LoadInt32LE(const uint8_t* p) {
  uint32_t v = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
               static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  return static_cast<int32_t>(v);
}

namespace {

// What a verified message is: its kind (an error for one a stream cannot hold) and body length.
Result<MessageInfo> InfoOf(const fb::Message* message) {
  MessageInfo info;
  info.body_length = message->body_length();
  if (info.body_length < 0) {
    return Status::Invalid("the metadata announces a negative body length (" +
                           std::to_string(info.body_length) + ")");
  }
  switch (message->header_type()) {
    case fb::MessageHeader::Schema:
      info.kind = MessageKind::kSchema;
      break;
    case fb::MessageHeader::DictionaryBatch:
      info.kind = MessageKind::kDictionary;
      break;
    case fb::MessageHeader::RecordBatch:
      info.kind = MessageKind::kRecordBatch;
      break;
    default:
      return Status::Invalid(std::string("a ") + internal::HeaderName(message->header_type()) +
                             " message has no place in a stream of record batches");
  }
  return info;
}

}  // namespace

Result<MessageInfo> InspectMessage(ByteSpan flatbuffer) {
  if (flatbuffer.size < 8 || flatbuffer.data == nullptr) {
    return Status::Invalid("the metadata (" + std::to_string(flatbuffer.size) +
                           " bytes) is not a valid Message flatbuffer");
  }
  const auto size = static_cast<size_t>(flatbuffer.size);
  const uint8_t* data = flatbuffer.data;
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
    aligned.resize((size + 7) / 8);
    std::memcpy(aligned.data(), flatbuffer.data, size);
    data = reinterpret_cast<const uint8_t*>(aligned.data());
  }
  flatbuffers::Verifier verifier(data, size);
  if (!fb::VerifyMessageBuffer(verifier)) {
    return Status::Invalid("the metadata (" + std::to_string(flatbuffer.size) +
                           " bytes) is not a valid Message flatbuffer");
  }
  return InfoOf(fb::GetMessage(data));
}

Result<InspectedMessage> Decoder::Inspect(ByteSpan metadata) {
  Impl& d = *impl_;
  FERRY_ASSIGN_OR_RAISE(const fb::Message* m, d.Begin(metadata.data, metadata.size));
  Result<MessageInfo> info = InfoOf(m);
  if (!info.ok()) return d.Fail(info.status().WithContext(d.Label(d.index)));
  d.inspected = true;
  return InspectedMessage{*info, {d.metadata.data(), d.metadata.size()}};
}

Result<int64_t> MessageBodyLength(ByteSpan flatbuffer) {
  FERRY_ASSIGN_OR_RAISE(MessageInfo info, InspectMessage(flatbuffer));
  return info.body_length;
}

}  // namespace ferry::ipc
