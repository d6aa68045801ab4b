// VerifiedShape: a record batch message that differs from the last verified one only in its
// values is known without verifying, any other byte changed makes it verified again, and a message
// whose values lie over its own layout is never remembered. Flatbuffers' builder and verifier are
// the oracle; the decoder still checks every value of a message it knows.
#include "ipc/verified_shape.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ferry/ipc/decoder.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using ipc::internal::VerifiedShape;
namespace fb = ipc::fb;

struct Batch {
  int64_t length = 1000;
  int64_t body_length = 30000;
  std::vector<fb::FieldNode> nodes;
  std::vector<fb::Buffer> buffers;
  bool compressed = false;
  bool custom_metadata = false;
};

Batch RandomBatch(std::mt19937_64& rng, size_t n_nodes, size_t n_buffers) {
  Batch b;
  b.length = 1 + static_cast<int64_t>(rng() % 100000);
  b.body_length = 8 + static_cast<int64_t>(rng() % 100000) * 8;
  for (size_t i = 0; i < n_nodes; ++i) {
    b.nodes.emplace_back(static_cast<int64_t>(rng()), static_cast<int64_t>(rng()));
  }
  for (size_t i = 0; i < n_buffers; ++i) {
    b.buffers.emplace_back(static_cast<int64_t>(rng()), static_cast<int64_t>(rng()));
  }
  return b;
}

std::vector<uint8_t> Built(const Batch& batch) {
  flatbuffers::FlatBufferBuilder b;
  auto nodes = b.CreateVectorOfStructs(batch.nodes);
  auto buffers = b.CreateVectorOfStructs(batch.buffers);
  flatbuffers::Offset<fb::BodyCompression> compression = 0;
  if (batch.compressed) compression = fb::CreateBodyCompression(b, fb::CompressionType::ZSTD);
  auto table = fb::CreateRecordBatch(b, batch.length, nodes, buffers, compression);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>> metadata = 0;
  if (batch.custom_metadata) {
    metadata = b.CreateVector({fb::CreateKeyValue(b, b.CreateString("k"), b.CreateString("v"))});
  }
  b.Finish(fb::CreateMessage(b, fb::MetadataVersion::V5, fb::MessageHeader::RecordBatch,
                             table.Union(), batch.body_length, metadata));
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

// The verified root of `bytes` (8-aligned: a vector's storage is).
const fb::Message* Verified(const std::vector<uint8_t>& bytes) {
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  EXPECT_TRUE(fb::VerifyMessageBuffer(verifier));
  return fb::GetMessage(bytes.data());
}

VerifiedShape Remembering(const std::vector<uint8_t>& bytes) {
  VerifiedShape shape;
  shape.Remember(bytes.data(), bytes.size(), Verified(bytes));
  return shape;
}

TEST(VerifiedShape, AMessageOfTheSameShapeMatchesWhateverItsValues) {
  std::mt19937_64 rng(11);
  const std::vector<uint8_t> first = Built(RandomBatch(rng, 3, 7));
  const VerifiedShape shape = Remembering(first);
  ASSERT_TRUE(shape.remembered());
  EXPECT_TRUE(shape.Matches(first.data(), first.size()));
  for (int i = 0; i < 20; ++i) {
    const std::vector<uint8_t> next = Built(RandomBatch(rng, 3, 7));
    EXPECT_TRUE(shape.Matches(next.data(), next.size())) << i;
  }
  // Other shapes: another count of nodes or buffers, a compressed body, custom metadata.
  Batch compressed = RandomBatch(rng, 3, 7);
  compressed.compressed = true;
  Batch annotated = RandomBatch(rng, 3, 7);
  annotated.custom_metadata = true;
  for (const Batch& other : {RandomBatch(rng, 4, 7), RandomBatch(rng, 3, 8), compressed, annotated,
                             RandomBatch(rng, 1, 2)}) {
    const std::vector<uint8_t> bytes = Built(other);
    EXPECT_FALSE(shape.Matches(bytes.data(), bytes.size()));
  }
  // A length or body length of 0 is left out of the table, and changes the layout.
  Batch empty = RandomBatch(rng, 3, 7);
  empty.length = 0;
  const std::vector<uint8_t> no_length = Built(empty);
  EXPECT_FALSE(shape.Matches(no_length.data(), no_length.size()));
}

// Flipping any one byte: the match holds exactly where the byte is a value, found by hand from
// flatbuffers' accessors.
TEST(VerifiedShape, EveryByteButTheValuesIsCompared) {
  std::mt19937_64 rng(5);
  const std::vector<uint8_t> bytes = Built(RandomBatch(rng, 3, 7));
  const VerifiedShape shape = Remembering(bytes);
  const fb::Message* m = fb::GetMessage(bytes.data());
  const fb::RecordBatch* rb = m->header_as_RecordBatch();
  std::vector<bool> value(bytes.size(), false);
  auto mark = [&](const void* at, size_t n) {
    const size_t from = static_cast<const uint8_t*>(at) - bytes.data();
    for (size_t k = from; k < from + n; ++k) value[k] = true;
  };
  mark(rb->nodes()->Data(), rb->nodes()->size() * 16);
  mark(rb->buffers()->Data(), rb->buffers()->size() * 16);
  // The two 64-bit scalars, where flatbuffers' tables say they are.
  auto slot = [](const void* table, flatbuffers::voffset_t field) {
    return static_cast<const flatbuffers::Table*>(table)->GetAddressOf(field);
  };
  mark(slot(rb, fb::RecordBatch::VT_LENGTH), 8);
  mark(slot(m, fb::Message::VT_BODY_LENGTH), 8);
  int compared = 0;
  for (size_t k = 0; k < bytes.size(); ++k) {
    std::vector<uint8_t> flipped = bytes;
    flipped[k] ^= 0x41;
    EXPECT_EQ(shape.Matches(flipped.data(), flipped.size()), value[k]) << "byte " << k;
    compared += value[k] ? 0 : 1;
  }
  EXPECT_GT(compared, 50);
}

// A hand-made message whose RecordBatch vtable lies inside its field nodes' data: flatbuffers'
// verifier accepts it, and a new value of a node would be a new layout, so it is not remembered.
// The same message with the vtable beside the data is.
std::vector<uint8_t> Crafted(bool vtable_in_nodes) {
  std::vector<uint8_t> b(136, 0);
  auto put = [&](size_t at, auto v) { std::memcpy(b.data() + at, &v, sizeof v); };
  put(0, uint32_t{8});  // the root: the Message table at 8
  // Message table [8, 32): version at 12, header type at 14, header at 16, body length at 24.
  put(8, int32_t{8 - 32});  // its vtable at 32
  put(12, static_cast<int16_t>(fb::MetadataVersion::V5));
  put(14, static_cast<uint8_t>(fb::MessageHeader::RecordBatch));
  put(16, uint32_t{48 - 16});  // the RecordBatch table at 48
  put(24, int64_t{0});
  const uint16_t message_vtable[] = {12, 24, 4, 6, 8, 16};
  std::memcpy(b.data() + 32, message_vtable, sizeof message_vtable);
  // RecordBatch table [48, 72): length at 56, nodes at 64, buffers at 68.
  const size_t batch_vtable = vtable_in_nodes ? 80 : 120;
  put(48, static_cast<int32_t>(48 - static_cast<int64_t>(batch_vtable)));
  put(56, int64_t{3});
  put(64, uint32_t{72 - 64});   // the nodes vector at 72, its data at 80
  put(68, uint32_t{112 - 68});  // the buffers vector at 112 (empty)
  put(72, uint32_t{2});         // two field nodes, [80, 112)
  put(112, uint32_t{0});
  const uint16_t batch_fields[] = {10, 24, 8, 16, 20};
  std::memcpy(b.data() + batch_vtable, batch_fields, sizeof batch_fields);
  return b;
}

TEST(VerifiedShape, ValuesThatLieOverTheLayoutAreNotRemembered) {
  for (const bool overlapping : {true, false}) {
    const std::vector<uint8_t> bytes = Crafted(overlapping);
    const fb::Message* m = Verified(bytes);
    ASSERT_NE(m->header_as_RecordBatch(), nullptr);
    ASSERT_EQ(m->header_as_RecordBatch()->nodes()->size(), 2u);
    VerifiedShape shape = Remembering(bytes);
    EXPECT_EQ(shape.remembered(), !overlapping);
    // Overlapping, a node's new value is a new vtable: the message must be verified again.
    // Apart, it is a value like any other.
    std::vector<uint8_t> changed = bytes;
    changed[80] = 200;
    EXPECT_EQ(shape.Matches(changed.data(), changed.size()), !overlapping);
  }
  // A remembered shape is forgotten on a message that cannot be remembered.
  std::mt19937_64 rng(3);
  const std::vector<uint8_t> batch = Built(RandomBatch(rng, 2, 0));
  VerifiedShape shape = Remembering(batch);
  ASSERT_TRUE(shape.remembered());
  const std::vector<uint8_t> crafted = Crafted(true);
  shape.Remember(crafted.data(), crafted.size(), Verified(crafted));
  EXPECT_FALSE(shape.remembered());
  EXPECT_FALSE(shape.Matches(batch.data(), batch.size()));
}

// A decoder that knows a batch's shape still checks its values: a buffer that lies outside the
// body is refused, naming it, and a changed layout byte is caught by the verifier.
TEST(VerifiedShape, ADecoderChecksTheValuesOfAMessageItKnows) {
  const Field root = testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s")});
  ASSERT_OK_AND_ASSIGN(Array batch, testing::ArrayFromJson(root, R"([{"x": 1, "s": "one"},
                                                                    {"x": 2, "s": "two"}])"));
  ASSERT_OK_AND_ASSIGN(SharedBytes stream,
                       testing::WriteIpc(batch.schema(), {batch.array(), batch.array()}, false));
  // The stream's messages: (metadata, body) pairs, each metadata an 8-aligned copy.
  std::vector<std::pair<std::vector<uint8_t>, SharedBytes>> messages;
  for (int64_t pos = 0; pos < stream.size;) {
    int32_t length = 0;
    std::memcpy(&length, stream.data + pos + 4, 4);
    if (length == 0) break;
    std::vector<uint8_t> metadata(stream.data + pos + 8, stream.data + pos + 8 + length);
    const int64_t body_length = fb::GetMessage(metadata.data())->body_length();
    messages.emplace_back(std::move(metadata), stream.Slice(pos + 8 + length, body_length));
    pos += 8 + length + body_length;
  }
  ASSERT_EQ(messages.size(), 3u);  // the schema and two batches
  auto decode = [&](const std::vector<uint8_t>& second_batch) {
    ipc::Decoder decoder;
    EXPECT_OK(decoder.ConsumeMessage({messages[0].first.data(), int64_t(messages[0].first.size())},
                                     messages[0].second));
    EXPECT_OK(decoder.ConsumeMessage({messages[1].first.data(), int64_t(messages[1].first.size())},
                                     messages[1].second));
    return decoder.ConsumeMessage({second_batch.data(), int64_t(second_batch.size())},
                                  messages[2].second);
  };
  EXPECT_OK(decode(messages[2].first));
  std::vector<uint8_t> outside = messages[2].first;
  const fb::RecordBatch* rb = fb::GetMessage(outside.data())->header_as_RecordBatch();
  const auto* buffers = rb->buffers();
  const size_t at = reinterpret_cast<const uint8_t*>(buffers->Data()) - outside.data();
  const int64_t far = int64_t{1} << 20;  // buffer 1's offset, beyond the body
  std::memcpy(outside.data() + at + 16, &far, 8);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "(body buffer 1) (offset 1048576",
                     decode(outside));
  std::vector<uint8_t> relaid = messages[2].first;
  const size_t nodes_at = reinterpret_cast<const uint8_t*>(rb->nodes()) - outside.data();
  const uint32_t huge = 1u << 30;  // the nodes vector's length prefix
  std::memcpy(relaid.data() + nodes_at, &huge, 4);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "not a valid Message flatbuffer",
                     decode(relaid));
}

}  // namespace
}  // namespace ferry
