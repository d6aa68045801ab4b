// The push decoder: feeding patterns, framing variants, the metadata/body seam, and the checks on
// untrusted input (limits, ordering, labels).
#include "ferry/ipc/decoder.hpp"

#include <cstring>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "ferry/format/json.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using Json = nlohmann::json;

Result<Array> SampleBatch() {
  const Field root = testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s"),
                                          Field::Dictionary("d", "i", Field::Make("u", "")),
                                          Field::Make("+l", "list", {Field::Make("i", "item")})});
  return testing::ArrayFromJson(root, R"([
    {"x": 1, "s": "one", "d": "a", "list": [1, 2]},
    {"x": null, "s": null, "d": "b", "list": null},
    {"x": 3, "s": "three", "d": "a", "list": []}])");
}

// Render each record batch the decoder yields.
std::vector<Json> Drain(ipc::Decoder& decoder, const ArrowSchema* schema) {
  std::vector<Json> out;
  while (std::optional<ipc::DecodedMessage> m = decoder.Next()) {
    if (m->kind != ipc::MessageKind::kRecordBatch) continue;
    Result<ArrayView> view = ArrayView::Make(schema);
    EXPECT_TRUE(view.ok());
    EXPECT_OK(view->SetArray(m->batch.get()));
    Result<std::string> json = ArrayToJson(*view);
    EXPECT_TRUE(json.ok());
    out.push_back(Json::parse(*json));
  }
  return out;
}

class DecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(Array b, SampleBatch());
    batch_.emplace(std::move(b));
    ASSERT_OK_AND_ASSIGN(expected_json_, ArrayToJson(batch_->view()));
    ASSERT_OK_AND_ASSIGN(
        bytes_, testing::WriteIpc(batch_->schema(), {batch_->array(), batch_->array()}, false));
  }
  std::optional<Array> batch_;
  std::string expected_json_;
  SharedBytes bytes_;
};

TEST_F(DecoderTest, WholeBufferIsZeroCopy) {
  ipc::Decoder decoder;
  ASSERT_OK(decoder.Consume(bytes_));
  EXPECT_TRUE(decoder.finished());
  EXPECT_EQ(decoder.next_required_size(), 0);
  EXPECT_EQ(decoder.bytes_copied(), 0);
  // schema, dictionary, two batches
  EXPECT_EQ(decoder.messages_decoded(), 4);
  std::vector<Json> batches = Drain(decoder, decoder.schema());
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], Json::parse(expected_json_));
}

TEST_F(DecoderTest, ByteByByteGivesTheSameBatches) {
  ipc::Decoder decoder;
  std::vector<int64_t> requests;
  for (int64_t i = 0; i < bytes_.size; ++i) {
    if (requests.empty() || decoder.next_required_size() != requests.back()) {
      requests.push_back(decoder.next_required_size());
    }
    ASSERT_OK(decoder.Consume(bytes_.Slice(i, 1)));
  }
  EXPECT_TRUE(decoder.finished());
  // It first asks for the 4-byte continuation marker, then the 4-byte length.
  ASSERT_GE(requests.size(), 3u);
  EXPECT_EQ(requests[0], 4);
  EXPECT_EQ(requests[1], 3);
  std::vector<Json> batches = Drain(decoder, decoder.schema());
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1], Json::parse(expected_json_));
  // Bodies gathered from pieces are owned copies.
  EXPECT_GT(decoder.bytes_copied(), 0);
}

TEST_F(DecoderTest, ExactRequestsStayZeroCopy) {
  ipc::Decoder decoder;
  int64_t pos = 0;
  while (decoder.next_required_size() > 0 && pos < bytes_.size) {
    const int64_t n = decoder.next_required_size();
    ASSERT_OK(decoder.Consume(bytes_.Slice(pos, n)));
    pos += n;
  }
  EXPECT_EQ(pos, bytes_.size);
  EXPECT_EQ(decoder.bytes_copied(), 0);
  EXPECT_EQ(Drain(decoder, decoder.schema()).size(), 2u);
}

// Rewrite a stream into the pre-1.0 framing: a bare int32 length, no continuation marker.
std::vector<uint8_t> ToLegacyFraming(const SharedBytes& in) {
  std::vector<uint8_t> out;
  int64_t pos = 0;
  while (pos + 8 <= in.size) {
    int32_t length = 0;
    std::memcpy(&length, in.data + pos + 4, 4);
    if (length == 0) break;
    out.insert(out.end(), in.data + pos + 4, in.data + pos + 8);
    out.insert(out.end(), in.data + pos + 8, in.data + pos + 8 + length);
    pos += 8 + length;
    // Copy the body: everything up to the next continuation marker at an 8-byte boundary.
    int64_t next = pos;
    while (next + 4 <= in.size && !(in.data[next] == 0xFF && in.data[next + 1] == 0xFF &&
                                    in.data[next + 2] == 0xFF && in.data[next + 3] == 0xFF)) {
      next += 8;
    }
    out.insert(out.end(), in.data + pos, in.data + next);
    pos = next;
  }
  out.insert(out.end(), {0, 0, 0, 0});  // the old end-of-stream marker
  return out;
}

TEST_F(DecoderTest, LegacyFramingIsReadAndMisalignedBodiesAreRealigned) {
  std::vector<uint8_t> legacy = ToLegacyFraming(bytes_);
  ipc::Decoder decoder;
  ASSERT_OK(
      decoder.Consume(SharedBytes::Borrow(legacy.data(), static_cast<int64_t>(legacy.size()))));
  EXPECT_TRUE(decoder.finished());
  std::vector<Json> batches = Drain(decoder, decoder.schema());
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], Json::parse(expected_json_));
  // The 4-byte prefix shifted every body off 8-byte alignment: those bodies were copied.
  EXPECT_GT(decoder.bytes_copied(), 0);
}

TEST_F(DecoderTest, MetadataAndBodyMayArriveSeparately) {
  // Split the stream into (metadata, body) pairs and feed them through ConsumeMessage.
  ipc::Decoder decoder;
  int64_t pos = 0;
  ipc::Decoder framing;
  while (pos < bytes_.size) {
    int32_t length = 0;
    std::memcpy(&length, bytes_.data + pos + 4, 4);
    if (length == 0) break;
    const uint8_t* metadata = bytes_.data + pos + 8;
    // The framing decoder tells how long the body is: feed it up to the body.
    ASSERT_OK(framing.Consume(bytes_.Slice(pos, 8 + length)));
    const int64_t body_length =
        framing.next_required_size() == 4 ? 0 : framing.next_required_size();
    ASSERT_OK(framing.Consume(bytes_.Slice(pos + 8 + length, body_length)));
    ASSERT_OK(
        decoder.ConsumeMessage(metadata, length, bytes_.Slice(pos + 8 + length, body_length)));
    pos += 8 + length + body_length;
  }
  EXPECT_EQ(decoder.bytes_copied(), 0);
  std::vector<Json> batches = Drain(decoder, decoder.schema());
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1], Json::parse(expected_json_));
  // A body shorter than announced is refused, naming the message.
  ipc::Decoder short_body;
  int32_t schema_length = 0;
  std::memcpy(&schema_length, bytes_.data + 4, 4);
  ASSERT_OK(short_body.ConsumeMessage(bytes_.data + 8, schema_length, {}));
  const uint8_t* dictionary = bytes_.data + 8 + schema_length;
  int32_t dictionary_length = 0;
  std::memcpy(&dictionary_length, dictionary + 4, 4);
  ASSERT_RAISES_WITH(EINVAL, "message 1: the metadata announces a body of",
                     short_body.ConsumeMessage(dictionary + 8, dictionary_length, {}));
}

TEST_F(DecoderTest, OutOfOrderMessagesAreRefused) {
  // Skip the schema: the dictionary comes first.
  int32_t length = 0;
  std::memcpy(&length, bytes_.data + 4, 4);
  ipc::Decoder decoder;
  ASSERT_RAISES_WITH(EINVAL, "message 0: a DictionaryBatch before the Schema",
                     decoder.Consume(bytes_.Slice(8 + length, bytes_.size - 8 - length)));
  // The decoder stays failed.
  ASSERT_RAISES_WITH(EINVAL, "before the Schema", decoder.Consume(bytes_));
}

TEST_F(DecoderTest, LimitsAreEnforced) {
  ipc::ReadOptions tiny;
  tiny.max_metadata_bytes = 16;
  ipc::Decoder decoder(tiny);
  ASSERT_RAISES_WITH(EINVAL, "exceeds the limit of 16", decoder.Consume(bytes_));

  // A huge advertised metadata length is refused before anything is allocated.
  const uint8_t lying[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xF0, 0xFF, 0xFF, 0x7F};
  ipc::Decoder d2;
  ASSERT_RAISES_WITH(EINVAL, "message 0: metadata length",
                     d2.Consume(SharedBytes::Borrow(lying, 8)));

  // Garbage metadata fails the flatbuffers Verifier.
  uint8_t garbage[24] = {0xFF, 0xFF, 0xFF, 0xFF, 16, 0, 0, 0};
  std::memset(garbage + 8, 0xAB, 16);
  ipc::Decoder d3;
  ASSERT_RAISES_WITH(EINVAL, "not a valid Message flatbuffer",
                     d3.Consume(SharedBytes::Borrow(garbage, 24)));
}

TEST(DecoderLimitTest, DecompressionIsCapped) {
  const Field root = testing::BatchField({Field::Make("l", "x")});
  std::string rows = "[";
  for (int i = 0; i < 20000; ++i) rows += std::string(i ? "," : "") + "{\"x\": 0}";
  rows += "]";
  ASSERT_OK_AND_ASSIGN(Array batch, testing::ArrayFromJson(root, rows));
  ipc::WriteOptions options;
  options.compression = ipc::Compression::kZstd;
  ASSERT_OK_AND_ASSIGN(SharedBytes bytes,
                       testing::WriteIpc(batch.schema(), {batch.array()}, false, options));
  EXPECT_LT(bytes.size, 4000);  // 160 kB of zeros compress to little
  ipc::ReadOptions capped;
  capped.max_decompressed_bytes = 100000;
  ipc::Decoder decoder(capped);
  ASSERT_RAISES_WITH(EINVAL, "message 1, field \"x\"", decoder.Consume(bytes));
  ipc::Decoder uncapped;
  ASSERT_OK(uncapped.Consume(bytes));
  EXPECT_EQ(uncapped.bytes_copied(), 160000);
}

}  // namespace
// Keeps a copy of each message's metadata and its body length, as the writer reports them.
class RecordingSink final : public ipc::MessageSink {
 public:
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    metadata.emplace_back(m.metadata.begin(), m.metadata.end());
    body_lengths.push_back(m.body_length);
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  std::vector<std::vector<uint8_t>> metadata;
  std::vector<int64_t> body_lengths;
};

TEST(MessageBodyLengthTest, ReadsWhatTheWriterAnnounced) {
  ASSERT_OK_AND_ASSIGN(Array batch, SampleBatch());
  RecordingSink sink;
  ASSERT_OK_AND_ASSIGN(ipc::StreamWriter writer, ipc::StreamWriter::Open(&sink, batch.schema()));
  ASSERT_OK(writer.WriteBatch(batch.array()));
  ASSERT_OK(writer.Close());
  ASSERT_EQ(sink.metadata.size(), 3u);  // schema, dictionary, batch
  EXPECT_EQ(sink.body_lengths[0], 0);
  EXPECT_GT(sink.body_lengths[2], 0);
  for (size_t i = 0; i < sink.metadata.size(); ++i) {
    const std::vector<uint8_t>& m = sink.metadata[i];
    ASSERT_OK_AND_ASSIGN(int64_t length, ipc::MessageBodyLength(m));
    EXPECT_EQ(length, sink.body_lengths[i]) << "message " << i;
    // As the dissociated protocol carries it: after a 5-byte header, so not 8-aligned.
    std::vector<uint8_t> shifted(m.size() + 5);
    std::memcpy(shifted.data() + 5, m.data(), m.size());
    ASSERT_OK_AND_ASSIGN(int64_t again, ipc::MessageBodyLength(std::span(shifted).subspan(5)));
    EXPECT_EQ(again, sink.body_lengths[i]);
  }
  std::vector<uint8_t> garbage(64, 0xAB);
  ASSERT_RAISES_WITH(EINVAL, "is not a valid Message flatbuffer", ipc::MessageBodyLength(garbage));
  ASSERT_RAISES_WITH(EINVAL, "is not a valid Message flatbuffer",
                     ipc::MessageBodyLength(std::span<const uint8_t>()));
}

}  // namespace ferry
