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
#include "support/type_cases.hpp"

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
  ASSERT_OK(decoder.Consume(SharedBytes::Borrow(legacy)));
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
        decoder.ConsumeMessage({metadata, length}, bytes_.Slice(pos + 8 + length, body_length)));
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
  ASSERT_OK(short_body.ConsumeMessage({bytes_.data + 8, schema_length}, {}));
  const uint8_t* dictionary = bytes_.data + 8 + schema_length;
  int32_t dictionary_length = 0;
  std::memcpy(&dictionary_length, dictionary + 4, 4);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "message 1: the metadata announces a body of",
                     short_body.ConsumeMessage({dictionary + 8, dictionary_length}, {}));
}

// Inspect verifies a message's metadata once and hands back its own aligned copy, which
// ConsumeMessage then decodes: the batches read back equal to the writer's, though the bytes
// first given are spoiled in between. Only that copy skips verification, and only once.
TEST_F(DecoderTest, AnInspectedMessageIsDecodedFromItsVerifiedCopy) {
  ipc::Decoder decoder;
  ipc::Decoder framing;
  std::vector<ipc::MessageKind> kinds;
  int64_t pos = 0;
  while (pos < bytes_.size) {
    int32_t length = 0;
    std::memcpy(&length, bytes_.data + pos + 4, 4);
    if (length == 0) break;
    ASSERT_OK(framing.Consume(bytes_.Slice(pos, 8 + length)));
    const int64_t body_length =
        framing.next_required_size() == 4 ? 0 : framing.next_required_size();
    ASSERT_OK(framing.Consume(bytes_.Slice(pos + 8 + length, body_length)));
    // As the dissociated protocol carries metadata: after a 5-byte header, not 8-aligned.
    std::vector<uint8_t> shifted(static_cast<size_t>(length) + 5);
    std::memcpy(shifted.data() + 5, bytes_.data + pos + 8, static_cast<size_t>(length));
    const ByteSpan given{shifted.data() + 5, length};
    ASSERT_OK_AND_ASSIGN(ipc::InspectedMessage inspected, decoder.Inspect(given));
    kinds.push_back(inspected.info.kind);
    EXPECT_EQ(inspected.info.body_length, body_length);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(inspected.metadata.data) % 8, 0u);
    EXPECT_EQ(inspected.metadata.size, length);
    std::memset(shifted.data(), 0xAB, shifted.size());  // what is decoded is the decoder's copy
    ASSERT_OK(
        decoder.ConsumeMessage(inspected.metadata, bytes_.Slice(pos + 8 + length, body_length)));
    pos += 8 + length + body_length;
  }
  EXPECT_EQ(kinds, (std::vector<ipc::MessageKind>{
                       ipc::MessageKind::kSchema, ipc::MessageKind::kDictionary,
                       ipc::MessageKind::kRecordBatch, ipc::MessageKind::kRecordBatch}));
  std::vector<Json> batches = Drain(decoder, decoder.schema());
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], Json::parse(expected_json_));
  EXPECT_EQ(batches[1], Json::parse(expected_json_));

  int32_t schema_length = 0;
  std::memcpy(&schema_length, bytes_.data + 4, 4);
  const ByteSpan schema{bytes_.data + 8, schema_length};
  const std::vector<uint8_t> garbage(64, 0xAB);
  // Other bytes after an inspection are verified as ever.
  ipc::Decoder other;
  ASSERT_OK(other.Inspect(schema).status());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "message 0: the metadata (64 bytes) is not a valid",
                     other.ConsumeMessage(garbage, {}));
  // A failed inspection stops the decoder, as a failed ConsumeMessage does.
  ipc::Decoder stopped;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is not a valid Message flatbuffer",
                     stopped.Inspect(garbage));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is not a valid Message flatbuffer",
                     stopped.ConsumeMessage(schema, {}));
}

TEST_F(DecoderTest, OutOfOrderMessagesAreRefused) {
  // Skip the schema: the dictionary comes first.
  int32_t length = 0;
  std::memcpy(&length, bytes_.data + 4, 4);
  ipc::Decoder decoder;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "message 0: a DictionaryBatch before the Schema",
                     decoder.Consume(bytes_.Slice(8 + length, bytes_.size - 8 - length)));
  // The decoder stays failed.
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "before the Schema", decoder.Consume(bytes_));
}

TEST_F(DecoderTest, LimitsAreEnforced) {
  ipc::ReadOptions tiny;
  tiny.max_metadata_bytes = 16;
  ipc::Decoder decoder(tiny);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "exceeds the limit of 16",
                     decoder.Consume(bytes_));

  // A huge advertised metadata length is refused before anything is allocated.
  const uint8_t lying[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xF0, 0xFF, 0xFF, 0x7F};
  ipc::Decoder d2;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "message 0: metadata length",
                     d2.Consume(SharedBytes::Borrow(lying)));

  // Garbage metadata fails the flatbuffers Verifier.
  uint8_t garbage[24] = {0xFF, 0xFF, 0xFF, 0xFF, 16, 0, 0, 0};
  std::memset(garbage + 8, 0xAB, 16);
  ipc::Decoder d3;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "not a valid Message flatbuffer",
                     d3.Consume(SharedBytes::Borrow(garbage)));
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
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "message 1, field \"x\"",
                     decoder.Consume(bytes));
  ipc::Decoder uncapped;
  ASSERT_OK(uncapped.Consume(bytes));
  EXPECT_EQ(uncapped.bytes_copied(), 160000);
}

}  // namespace
// Keeps a copy of each message's metadata, its body length and its body buffers, as the writer
// reports them.
class RecordingSink final : public ipc::MessageSink {
 public:
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    metadata.emplace_back(m.metadata.begin(), m.metadata.end());
    body_lengths.push_back(m.body_length);
    buffers.emplace_back();
    for (const ipc::BodyBuffer& b : m.buffers) {
      buffers.back().emplace_back(b.data, b.data + b.length);
    }
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  std::vector<std::vector<uint8_t>> metadata;
  std::vector<int64_t> body_lengths;
  std::vector<std::vector<std::vector<uint8_t>>> buffers;
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
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is not a valid Message flatbuffer",
                     ipc::MessageBodyLength(garbage));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is not a valid Message flatbuffer",
                     ipc::MessageBodyLength(std::span<const uint8_t>()));
}

// ---- Projection: ReadOptions::columns ---------------------------------------------------------

// Every type case as one column ("c0", "c1", ...) of `rows` rows with nulls, and how each
// renders by the type case's own generator (the oracle the decoded columns are checked against).
struct TypeCasesBatch {
  Array batch;
  std::vector<Json> rendered;
};

Result<TypeCasesBatch> MakeTypeCasesBatch(int64_t rows) {
  const auto& cases = testing::TypeCases();
  std::vector<Field> columns;
  std::vector<Json> values;
  std::vector<Json> rendered;
  for (size_t t = 0; t < cases.size(); ++t) {
    testing::GeneratedValues g = testing::GenerateValues(cases[t], t * 7919 + 3, rows, true);
    Field f = cases[t].field;
    f.name = "c" + std::to_string(t);
    columns.push_back(std::move(f));
    values.push_back(std::move(g.values));
    rendered.push_back(std::move(g.rendered));
  }
  Json table = Json::array();
  for (int64_t i = 0; i < rows; ++i) {
    Json row = Json::object();
    for (size_t t = 0; t < columns.size(); ++t) row[columns[t].name] = values[t][i];
    table.push_back(std::move(row));
  }
  FERRY_ASSIGN_OR_RAISE(Array batch,
                        testing::ArrayFromJson(testing::BatchField(columns), table.dump()));
  return TypeCasesBatch{std::move(batch), std::move(rendered)};
}

TEST(DecoderProjectionTest, DecodesOnlyTheColumnsAskedForOfEveryType) {
  const int64_t rows = 7;
  ASSERT_OK_AND_ASSIGN(TypeCasesBatch c, MakeTypeCasesBatch(rows));
  ASSERT_OK_AND_ASSIGN(
      SharedBytes bytes,
      testing::WriteIpc(c.batch.schema(), {c.batch.array(), c.batch.array()}, false));
  const auto n = static_cast<int32_t>(c.rendered.size());
  std::vector<std::vector<int32_t>> selections;
  for (int32_t k = 0; k < n; ++k) selections.push_back({k});
  selections.push_back({0, n / 2, n - 1});
  std::vector<int32_t> even;
  for (int32_t k = 0; k < n; k += 2) even.push_back(k);
  selections.push_back(even);
  for (const std::vector<int32_t>& selection : selections) {
    ipc::ReadOptions options;
    options.columns = selection;
    Json expected = Json::array();
    for (int64_t i = 0; i < rows; ++i) {
      Json row = Json::object();
      for (int32_t k : selection) row["c" + std::to_string(k)] = c.rendered[k][i];
      expected.push_back(std::move(row));
    }
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(bytes, options));
    ASSERT_EQ(read.size(), 2u);
    for (const std::string& batch : read) {
      EXPECT_EQ(Json::parse(batch), expected)
          << "columns " << Json(selection).dump()
          << " (first: " << testing::TypeCases()[selection[0]].name << ")";
    }
  }
}

// The sample batch's messages as the dissociated protocol's server sees them.
RecordingSink SampleMessages() {
  RecordingSink sink;
  Result<Array> batch = SampleBatch();
  EXPECT_TRUE(batch.ok());
  Result<ipc::StreamWriter> writer = ipc::StreamWriter::Open(&sink, batch->schema());
  EXPECT_TRUE(writer.ok());
  EXPECT_OK(writer->WriteBatch(batch->array()));
  EXPECT_OK(writer->Close());
  return sink;
}

// Feed message `i` of `sink` with its buffers lent: the needed ones copied into a region of
// their own, every other given a location no region has (so reading one would fail).
Status FeedLent(ipc::Decoder& decoder, const RecordingSink& sink, size_t i,
                std::vector<bool>* needed_out) {
  const std::vector<uint8_t>& m = sink.metadata[i];
  FERRY_ASSIGN_OR_RAISE(std::vector<bool> needed, decoder.BuffersNeeded(m));
  if (needed_out != nullptr) *needed_out = needed;
  if (needed.size() != sink.buffers[i].size()) {
    return Status::Invalid("BuffersNeeded gave " + std::to_string(needed.size()) + " flags for " +
                           std::to_string(sink.buffers[i].size()) + " buffers");
  }
  std::vector<ipc::BufferLocation> at;
  int64_t size = 0;
  for (size_t b = 0; b < needed.size(); ++b) {
    if (!needed[b]) {
      at.push_back({-1, -1});
      continue;
    }
    at.push_back({size, static_cast<int64_t>(sink.buffers[i][b].size())});
    size += (static_cast<int64_t>(sink.buffers[i][b].size()) + 7) / 8 * 8;
  }
  auto words = std::make_shared<std::vector<uint64_t>>(static_cast<size_t>(size / 8 + 1));
  auto* base = reinterpret_cast<uint8_t*>(words->data());
  for (size_t b = 0; b < needed.size(); ++b) {
    if (needed[b] && !sink.buffers[i][b].empty()) {
      std::memcpy(base + at[b].offset, sink.buffers[i][b].data(), sink.buffers[i][b].size());
    }
  }
  const SharedBytes region{base, size, words};
  return decoder.ConsumeMessageBuffers(m, region, at);
}

TEST(DecoderProjectionTest, LentBuffersOfOtherColumnsAreNeverRead) {
  const RecordingSink sink = SampleMessages();
  ASSERT_EQ(sink.metadata.size(), 3u);  // schema, the dictionary of d, the batch
  // Buffers of the batch, by hand: x (validity, values), s (validity, offsets, data),
  // d (validity, indices), list (validity, offsets) and its int32 items (validity, values).
  struct Case {
    std::vector<int32_t> columns;
    bool dictionary_needed;
    std::vector<bool> batch_needed;
    std::string rows;
  };
  const std::vector<Case> cases = {
      {{1}, false, {0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0}, R"([{"s":"one"},{"s":null},{"s":"three"}])"},
      {{2}, true, {0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0}, R"([{"d":"a"},{"d":"b"},{"d":"a"}])"},
      {{0, 3},
       false,
       {1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1},
       R"([{"x":1,"list":[1,2]},{"x":null,"list":null},{"x":3,"list":[]}])"},
  };
  for (const Case& c : cases) {
    ipc::ReadOptions options;
    options.columns = c.columns;
    ipc::Decoder decoder(options);
    ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "no schema has been decoded yet",
                       decoder.BuffersNeeded(sink.metadata[0]));
    ASSERT_OK(decoder.ConsumeMessage(sink.metadata[0], {}));
    ASSERT_EQ(decoder.schema()->n_children, static_cast<int64_t>(c.columns.size()));
    std::vector<bool> dictionary;
    ASSERT_OK(FeedLent(decoder, sink, 1, &dictionary));
    EXPECT_EQ(dictionary, std::vector<bool>(dictionary.size(), c.dictionary_needed));
    std::vector<bool> batch;
    ASSERT_OK(FeedLent(decoder, sink, 2, &batch));
    EXPECT_EQ(batch, c.batch_needed) << Json(c.columns).dump();
    std::vector<Json> got = Drain(decoder, decoder.schema());
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], Json::parse(c.rows)) << Json(c.columns).dump();
  }
  // Without a projection every buffer is needed, and a lying location is refused.
  ipc::Decoder whole;
  ASSERT_OK(whole.ConsumeMessage(sink.metadata[0], {}));
  ASSERT_OK_AND_ASSIGN(std::vector<bool> all, whole.BuffersNeeded(sink.metadata[2]));
  EXPECT_EQ(all, std::vector<bool>(11, true));
}

TEST(DecoderProjectionTest, ColumnsOutOfRangeOrOrderAreRefused) {
  const RecordingSink sink = SampleMessages();
  ipc::ReadOptions options;
  options.columns = {1, 4};
  ipc::Decoder past(options);
  ASSERT_RAISES_WITH(StatusCode::kOutOfRange,
                     "message 0 (schema): column 4 was asked for, but the schema has 4",
                     past.ConsumeMessage(sink.metadata[0], {}));
  options.columns = {2, 1};
  ipc::Decoder unordered(options);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "increasing order without repeats (1 after 2)",
                     unordered.ConsumeMessage(sink.metadata[0], {}));
}

}  // namespace ferry
