// BatchMessages: a record batch's Message flatbuffer, patched for the batches of one shape.
#include "ipc/batch_message.hpp"

#include <cstring>

namespace ferry::ipc::internal {

namespace {

void StoreInt64LE(uint8_t* at, int64_t value) {
  const int64_t le = flatbuffers::EndianScalar(value);
  std::memcpy(at, &le, sizeof(le));
}

// A generated table as the flatbuffers::Table it is (its base is private), for the address of
// a field.
template <typename T>
const flatbuffers::Table* AsTable(const T* table) {
  return reinterpret_cast<const flatbuffers::Table*>(table);
}

}  // namespace

flatbuffers::Offset<fb::RecordBatch> BatchTable(flatbuffers::FlatBufferBuilder& b,
                                                const AssembledBody& body,
                                                Compression compression) {
  flatbuffers::Offset<fb::BodyCompression> compressed = 0;
  if (compression != Compression::kNone) {
    compressed = fb::CreateBodyCompression(b, compression == Compression::kZstd
                                                  ? fb::CompressionType::ZSTD
                                                  : fb::CompressionType::LZ4_FRAME);
  }
  auto nodes = b.CreateVectorOfStructs(body.nodes);
  auto buffers = b.CreateVectorOfStructs(body.buffers);
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> variadic = 0;
  if (!body.variadic_counts.empty()) variadic = b.CreateVector(body.variadic_counts);
  return fb::CreateRecordBatch(b, body.length, nodes, buffers, compressed, variadic);
}

ByteSpan BatchMessages::Encode(const AssembledBody& body) {
  const bool fixed = Fixed(body);
  patched_ = fixed && reusable_ && body.nodes.size() == nodes_ && body.buffers.size() == buffers_;
  if (patched_) {
    uint8_t* base = bytes_.data();
    StoreInt64LE(base + length_at_, body.length);
    StoreInt64LE(base + body_length_at_, body.body_length);
    // FieldNode and Buffer are flatbuffer structs: their memory is their little-endian wire form.
    if (!body.nodes.empty()) {
      std::memcpy(base + nodes_at_, body.nodes.data(), body.nodes.size() * sizeof(fb::FieldNode));
    }
    if (!body.buffers.empty()) {
      std::memcpy(base + buffers_at_, body.buffers.data(),
                  body.buffers.size() * sizeof(fb::Buffer));
    }
    return {bytes_.data(), static_cast<int64_t>(bytes_.size())};
  }
  flatbuffers::FlatBufferBuilder& b = builder_;
  b.Clear();
  auto table = BatchTable(b, body, Compression::kNone);
  b.Finish(fb::CreateMessage(b, fb::MetadataVersion::V5, fb::MessageHeader::RecordBatch,
                             table.Union(), body.body_length));
  bytes_.assign(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  reusable_ = false;
  if (fixed) {
    // Where the builder put the values: found through the message itself.
    const uint8_t* base = bytes_.data();
    const fb::Message* m = fb::GetMessage(base);
    const fb::RecordBatch* rb = m->header_as_RecordBatch();
    const uint8_t* length = AsTable(rb)->GetAddressOf(fb::RecordBatch::VT_LENGTH);
    const uint8_t* body_length = AsTable(m)->GetAddressOf(fb::Message::VT_BODY_LENGTH);
    if (length != nullptr && body_length != nullptr && rb->nodes() != nullptr &&
        rb->buffers() != nullptr) {
      length_at_ = static_cast<size_t>(length - base);
      body_length_at_ = static_cast<size_t>(body_length - base);
      nodes_at_ = static_cast<size_t>(reinterpret_cast<const uint8_t*>(rb->nodes()->data()) - base);
      buffers_at_ =
          static_cast<size_t>(reinterpret_cast<const uint8_t*>(rb->buffers()->data()) - base);
      nodes_ = body.nodes.size();
      buffers_ = body.buffers.size();
      reusable_ = true;
    }
  }
  return {bytes_.data(), static_cast<int64_t>(bytes_.size())};
}

}  // namespace ferry::ipc::internal
