// The IPC conformance suite: every type case x nulls x slice x codec x format is written by
// ferry's writer and read back by ferry's reader. The oracle is the generated value list (sliced
// in the test); pyarrow checks the same bytes in python/tests/test_ipc.py.
#include "ferry/ipc/writer.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/reader.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"
#include "support/type_cases.hpp"

namespace ferry {
namespace {

using testing::Json;
using testing::TypeCase;

const std::vector<TypeCase>& Cases() { return testing::TypeCases(); }

struct Param {
  size_t type_index;
  bool nulls;
  int64_t offset;
  int64_t length;
  ipc::Compression compression;
  bool file;
};

class IpcConformanceTest : public ::testing::TestWithParam<Param> {};

TEST_P(IpcConformanceTest, WriteReadRender) {
  const Param p = GetParam();
  const TypeCase& tc = Cases()[p.type_index];
  const int64_t total = p.offset + p.length;
  auto [values, rendered] = testing::GenerateValues(tc, p.type_index * 104729 + 7, total, p.nulls);
  Json rows = Json::array();
  for (const Json& v : values) rows.push_back(Json{{"c", v}});
  Field column = tc.field;
  column.name = "c";
  const Field root = testing::BatchField({column});
  ASSERT_OK_AND_ASSIGN(Array batch,
                       testing::SlicedArrayFromJson(root, rows.dump(), p.offset, p.length));

  ipc::WriteOptions options;
  options.compression = p.compression;
  ASSERT_OK_AND_ASSIGN(SharedBytes bytes,
                       testing::WriteIpc(batch.schema(), {batch.array()}, p.file, options));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(bytes));
  ASSERT_EQ(read.size(), 1u);

  Json expected = Json::array();
  for (int64_t i = p.offset; i < total; ++i) {
    expected.push_back(Json{{"c", rendered[static_cast<size_t>(i)]}});
  }
  EXPECT_EQ(Json::parse(read[0]), expected) << "type " << tc.name;
}

std::vector<Param> AllParams() {
  std::vector<Param> params;
  for (size_t t = 0; t < Cases().size(); ++t) {
    for (bool nulls : {false, true}) {
      params.push_back({t, nulls, 0, 300, ipc::Compression::kNone, false});
      params.push_back({t, nulls, 13, 300, ipc::Compression::kNone, true});
      params.push_back({t, nulls, 3, 0, ipc::Compression::kNone, false});
      params.push_back({t, nulls, 5, 300, ipc::Compression::kLz4Frame, false});
      params.push_back({t, nulls, 0, 300, ipc::Compression::kZstd, true});
    }
  }
  return params;
}

const char* CodecName(ipc::Compression c) {
  switch (c) {
    case ipc::Compression::kLz4Frame:
      return "lz4";
    case ipc::Compression::kZstd:
      return "zstd";
    default:
      return "raw";
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, IpcConformanceTest, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           const Param& p = param_info.param;
                           return Cases()[p.type_index].name + (p.nulls ? "_nulls" : "_dense") +
                                  "_off" + std::to_string(p.offset) + "_len" +
                                  std::to_string(p.length) + "_" + CodecName(p.compression) +
                                  (p.file ? "_file" : "_stream");
                         });

// ---- Layout details ------------------------------------------------------------------------

Result<Array> IntBatch(const std::string& json) {
  return testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x")}), json);
}

TEST(IpcWriterTest, BodiesAreZeroCopyAndAlignedAsAsked) {
  ASSERT_OK_AND_ASSIGN(Array batch, IntBatch(R"([{"x": 1}, {"x": null}, {"x": 3}])"));
  for (int32_t alignment : {8, 64}) {
    ipc::WriteOptions options;
    options.alignment = alignment;
    ASSERT_OK_AND_ASSIGN(SharedBytes bytes,
                         testing::WriteIpc(batch.schema(), {batch.array()}, false, options));
    ipc::Decoder decoder;
    ASSERT_OK(decoder.Consume(bytes));
    ASSERT_EQ(decoder.bytes_copied(), 0);
    std::optional<ipc::DecodedMessage> m;
    while ((m = decoder.Next()) && m->kind != ipc::MessageKind::kRecordBatch) {
    }
    ASSERT_TRUE(m.has_value());
    std::vector<const void*> pointers;
    testing::CollectBuffers(m->batch.get(), &pointers);
    int checked = 0;
    for (const void* ptr : pointers) {
      if (ptr == nullptr) continue;
      const auto* b = static_cast<const uint8_t*>(ptr);
      // Every buffer points into the written bytes (no copy), at the asked alignment.
      EXPECT_GE(b, bytes.data);
      EXPECT_LT(b, bytes.data + bytes.size);
      EXPECT_EQ((b - bytes.data) % alignment, 0) << "alignment " << alignment;
      ++checked;
    }
    EXPECT_EQ(checked, 2);  // validity and values (the root struct has no bitmap)
  }
}

TEST(IpcWriterTest, StreamBytesFollowTheFraming) {
  ASSERT_OK_AND_ASSIGN(Array batch, IntBatch(R"([{"x": 7}])"));
  ASSERT_OK_AND_ASSIGN(SharedBytes bytes,
                       testing::WriteIpc(batch.schema(), {batch.array()}, false));
  // Continuation marker, then an 8-aligned metadata length; the stream ends with the
  // end-of-stream marker (continuation + 0).
  ASSERT_GE(bytes.size, 16);
  EXPECT_EQ(std::vector<uint8_t>(bytes.data, bytes.data + 4),
            (std::vector<uint8_t>{0xFF, 0xFF, 0xFF, 0xFF}));
  int32_t length = 0;
  std::memcpy(&length, bytes.data + 4, 4);
  EXPECT_EQ((8 + length) % 8, 0);
  EXPECT_EQ(std::vector<uint8_t>(bytes.data + bytes.size - 8, bytes.data + bytes.size),
            (std::vector<uint8_t>{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}));
  EXPECT_EQ(bytes.size % 8, 0);
}

TEST(IpcWriterTest, FileHasMagicFooterAndRandomAccess) {
  std::vector<Array> batches;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(Array b, IntBatch("[{\"x\": " + std::to_string(i) + "}]"));
    batches.push_back(std::move(b));
  }
  ipc::WriteOptions options;
  options.file_metadata = {{"k", "v"}};
  ASSERT_OK_AND_ASSIGN(SharedBytes bytes, testing::WriteIpc(batches[0].schema(),
                                                            {batches[0].array(), batches[1].array(),
                                                             batches[2].array()},
                                                            true, options));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data), 8),
            std::string("ARROW1\0\0", 8));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data + bytes.size - 6), 6), "ARROW1");
  ASSERT_OK_AND_ASSIGN(ipc::FileReader reader, ipc::FileReader::Open(bytes));
  EXPECT_EQ(reader.num_record_batches(), 3);
  EXPECT_EQ(reader.metadata(), (Metadata{{"k", "v"}}));
  for (int64_t i : {2, 0, 1}) {
    ASSERT_OK_AND_ASSIGN(UniqueArray b, reader.ReadRecordBatch(i));
    int64_t value = 0;
    std::memcpy(&value, b->children[0]->buffers[1], 8);
    EXPECT_EQ(value, i);
  }
  ASSERT_RAISES_WITH(StatusCode::kOutOfRange, "record batch 3 is outside 0..2",
                     reader.ReadRecordBatch(3));
}

TEST(IpcWriterTest, DictionariesAreSentOnceAndReplacedWhenTheyChange) {
  const Field root = testing::BatchField({Field::Dictionary("d", "i", Field::Make("u", ""))});
  ASSERT_OK_AND_ASSIGN(Array a, testing::ArrayFromJson(root, R"([{"d": "x"}, {"d": "y"}])"));
  ASSERT_OK_AND_ASSIGN(Array b, testing::ArrayFromJson(root, R"([{"d": "z"}])"));
  ipc::MemorySink sink;
  ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, a.schema()));
  ASSERT_OK(w.WriteBatch(a.array()));
  ASSERT_OK(w.WriteBatch(a.array()));
  ASSERT_OK(w.WriteBatch(b.array()));
  ASSERT_OK(w.Close());
  EXPECT_EQ(w.stats().dictionary_batches, 2);
  EXPECT_EQ(w.stats().record_batches, 3);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(sink.Finish()));
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(Json::parse(read[1]), Json::parse(R"([{"d": "x"}, {"d": "y"}])"));
  EXPECT_EQ(Json::parse(read[2]), Json::parse(R"([{"d": "z"}])"));

  // The file format cannot replace a dictionary: the writer says so.
  ipc::MemorySink file_sink;
  ASSERT_OK_AND_ASSIGN(auto fw, ipc::FileWriter::Open(&file_sink, a.schema()));
  ASSERT_OK(fw.WriteBatch(a.array()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "cannot replace", fw.WriteBatch(b.array()));
}

TEST(IpcWriterTest, GrowingDictionariesGoAsDeltasWhenAsked) {
  const Field root = testing::BatchField({Field::Dictionary("d", "i", Field::Make("u", ""))});
  ASSERT_OK_AND_ASSIGN(Array a, testing::ArrayFromJson(root, R"([{"d": "x"}, {"d": "y"}])"));
  ASSERT_OK_AND_ASSIGN(Array grown,
                       testing::ArrayFromJson(root, R"([{"d": "x"}, {"d": "y"}, {"d": "z"}])"));
  ASSERT_OK_AND_ASSIGN(Array other, testing::ArrayFromJson(root, R"([{"d": "q"}])"));
  ipc::WriteOptions options;
  options.emit_dictionary_deltas = true;
  ipc::MemorySink sink;
  ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, a.schema(), options));
  for (const Array* b : {&a, &grown, &grown, &other}) ASSERT_OK(w.WriteBatch(b->array()));
  ASSERT_OK(w.Close());
  EXPECT_EQ(w.stats().dictionary_batches, 3);  // x,y; then z alone; then a replacement q
  EXPECT_EQ(w.stats().dictionary_deltas, 1);
  SharedBytes bytes = sink.Finish();
  // Held, the batches make the same bytes (the growth told from the bytes of the dictionary sent,
  // which the writer still holds).
  ipc::MemorySink held_sink;
  ASSERT_OK_AND_ASSIGN(auto hw, ipc::StreamWriter::Open(&held_sink, a.schema(), options));
  int releases[4] = {};
  int k = 0;
  for (const Array* b : {&a, &grown, &grown, &other}) {
    ASSERT_OK(hw.WriteHeldBatch(testing::BorrowCounted(b->array(), &releases[k++])));
  }
  ASSERT_OK(hw.Close());
  for (int r : releases) EXPECT_EQ(r, 1);
  EXPECT_EQ(hw.stats().dictionary_deltas, 1);
  SharedBytes held_bytes = held_sink.Finish();
  ASSERT_EQ(held_bytes.size, bytes.size);
  EXPECT_EQ(std::memcmp(held_bytes.data, bytes.data, static_cast<size_t>(bytes.size)), 0);
  ipc::Decoder decoder;
  ASSERT_OK(decoder.Consume(bytes));
  std::vector<bool> deltas;
  while (std::optional<ipc::DecodedMessage> m = decoder.Next()) {
    if (m->kind == ipc::MessageKind::kDictionary) deltas.push_back(m->is_delta);
  }
  EXPECT_EQ(deltas, (std::vector<bool>{false, true, false}));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(bytes));
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(Json::parse(read[1]), Json::parse(R"([{"d": "x"}, {"d": "y"}, {"d": "z"}])"));
  EXPECT_EQ(Json::parse(read[3]), Json::parse(R"([{"d": "q"}])"));

  // A file accepts the delta, not the replacement; without deltas it accepts neither.
  ipc::MemorySink file_sink;
  ASSERT_OK_AND_ASSIGN(auto fw, ipc::FileWriter::Open(&file_sink, a.schema(), options));
  ASSERT_OK(fw.WriteBatch(a.array()));
  ASSERT_OK(fw.WriteBatch(grown.array()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "cannot replace", fw.WriteBatch(other.array()));
  ASSERT_OK(fw.Close());
  SharedBytes file = file_sink.Finish();
  ASSERT_OK_AND_ASSIGN(ipc::FileReader reader, ipc::FileReader::Open(file));
  EXPECT_EQ(reader.num_record_batches(), 2);
  EXPECT_EQ(reader.num_dictionaries(), 2);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> from_file, testing::ReadIpcAsJson(file));
  ASSERT_EQ(from_file.size(), 2u);
  EXPECT_EQ(Json::parse(from_file[0]), Json::parse(R"([{"d": "x"}, {"d": "y"}])"));
  EXPECT_EQ(Json::parse(from_file[1]), Json::parse(read[1]));
  ipc::MemorySink plain_sink;
  ASSERT_OK_AND_ASSIGN(auto pw, ipc::FileWriter::Open(&plain_sink, a.schema()));
  ASSERT_OK(pw.WriteBatch(a.array()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "cannot replace", pw.WriteBatch(grown.array()));
}

// A held batch is kept until the next is written (or the writer closes), so a dictionary at the
// memory of the one sent last is known by its memory. What the reader gets is what it gets without
// holding: a dictionary at other memory is compared by its values, and a batch written without
// being held makes the writer forget every dictionary's memory.
TEST(IpcWriterTest, HeldBatchesAreKeptUntilTheNextAndTheirDictionariesKnownByTheirMemory) {
  const Field root = testing::BatchField({Field::Dictionary("d", "i", Field::Make("u", ""))});
  ASSERT_OK_AND_ASSIGN(Array xy, testing::ArrayFromJson(root, R"([{"d": "x"}, {"d": "y"}])"));
  // Other memory holding the same dictionary, x then y.
  ASSERT_OK_AND_ASSIGN(Array xy_again, testing::ArrayFromJson(root, R"([{"d": "x"}, {"d": "y"}])"));
  ASSERT_OK_AND_ASSIGN(Array z, testing::ArrayFromJson(root, R"([{"d": "z"}])"));
  ASSERT_OK_AND_ASSIGN(Array y, testing::ArrayFromJson(root, R"([{"d": "y"}])"));
  int releases[7] = {};
  ipc::MemorySink sink;
  ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, xy.schema()));
  ASSERT_OK(w.WriteHeldBatch(testing::BorrowCounted(xy.array(), &releases[0])));
  EXPECT_EQ(releases[0], 0);  // held
  ASSERT_OK(w.WriteHeldBatch(testing::BorrowCounted(xy.array(), &releases[1])));
  EXPECT_EQ(releases[0], 1);  // let go once the next was written
  EXPECT_EQ(releases[1], 0);
  EXPECT_EQ(w.stats().dictionary_batches, 1);
  ASSERT_OK(w.WriteHeldBatch(
      testing::BorrowCounted(z.array(), &releases[2])));  // other memory, other values
  EXPECT_EQ(w.stats().dictionary_batches, 2);
  ASSERT_OK(w.WriteBatch(xy.array()));  // not held: x, y again, by their values
  EXPECT_EQ(w.stats().dictionary_batches, 3);
  ASSERT_OK(w.WriteHeldBatch(
      testing::BorrowCounted(z.array(), &releases[3])));  // z's memory: now compared
  EXPECT_EQ(w.stats().dictionary_batches, 4);
  ASSERT_OK(w.WriteHeldBatch(testing::BorrowCounted(y.array(), &releases[4])));
  EXPECT_EQ(w.stats().dictionary_batches, 5);  // y: a replacement
  ASSERT_OK(w.WriteHeldBatch(testing::BorrowCounted(xy_again.array(), &releases[5])));
  EXPECT_EQ(w.stats().dictionary_batches, 6);  // x, y again: a replacement
  ASSERT_OK(w.WriteHeldBatch(testing::BorrowCounted(xy.array(), &releases[6])));
  EXPECT_EQ(w.stats().dictionary_batches, 6);  // the same values in other memory: no message
  EXPECT_EQ(releases[5], 1);
  EXPECT_EQ(releases[6], 0);  // the last, held until the writer closes
  ASSERT_OK(w.Close());
  for (int r : releases) EXPECT_EQ(r, 1);
  EXPECT_EQ(w.stats().record_batches, 8);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(sink.Finish()));
  ASSERT_EQ(read.size(), 8u);
  const char* expected[8] = {R"([{"d": "x"}, {"d": "y"}])",
                             R"([{"d": "x"}, {"d": "y"}])",
                             R"([{"d": "z"}])",
                             R"([{"d": "x"}, {"d": "y"}])",
                             R"([{"d": "z"}])",
                             R"([{"d": "y"}])",
                             R"([{"d": "x"}, {"d": "y"}])",
                             R"([{"d": "x"}, {"d": "y"}])"};
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(Json::parse(read[i]), Json::parse(expected[i])) << i;

  // A writer that goes without closing lets its held batch go too.
  int last = 0;
  {
    ipc::MemorySink other;
    ASSERT_OK_AND_ASSIGN(auto gone, ipc::StreamWriter::Open(&other, xy.schema()));
    ASSERT_OK(gone.WriteHeldBatch(testing::BorrowCounted(xy.array(), &last)));
    EXPECT_EQ(last, 0);
  }
  EXPECT_EQ(last, 1);

  // A schema without dictionaries has nothing to compare: its batch is let go once written.
  ASSERT_OK_AND_ASSIGN(Array plain, IntBatch(R"([{"x": 7}])"));
  int written = 0;
  ipc::MemorySink plain_sink;
  ASSERT_OK_AND_ASSIGN(auto pw, ipc::StreamWriter::Open(&plain_sink, plain.schema()));
  ASSERT_OK(pw.WriteHeldBatch(testing::BorrowCounted(plain.array(), &written)));
  EXPECT_EQ(written, 1);
  ASSERT_OK(pw.Close());
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> got, testing::ReadIpcAsJson(plain_sink.Finish()));
  EXPECT_EQ(got, std::vector<std::string>{R"([{"x": 7}])"});
}

// A file writer refusing a held batch's replacement leaves the dictionary it sent as it was: a
// later growth of it still goes as a delta, and every held batch is let go once.
TEST(IpcWriterTest, AFileThatRefusesAHeldReplacementStillTakesALaterGrowth) {
  const Field root = testing::BatchField({Field::Dictionary("d", "i", Field::Make("u", ""))});
  ASSERT_OK_AND_ASSIGN(Array a, testing::ArrayFromJson(root, R"([{"d": "x"}, {"d": "y"}])"));
  ASSERT_OK_AND_ASSIGN(Array grown,
                       testing::ArrayFromJson(root, R"([{"d": "x"}, {"d": "y"}, {"d": "z"}])"));
  ASSERT_OK_AND_ASSIGN(Array other, testing::ArrayFromJson(root, R"([{"d": "q"}])"));
  ASSERT_OK_AND_ASSIGN(
      Array more,
      testing::ArrayFromJson(root, R"([{"d": "x"}, {"d": "y"}, {"d": "z"}, {"d": "w"}])"));
  ipc::WriteOptions options;
  options.emit_dictionary_deltas = true;
  ipc::MemorySink sink;
  int releases[4] = {};
  {
    ASSERT_OK_AND_ASSIGN(auto w, ipc::FileWriter::Open(&sink, a.schema(), options));
    ASSERT_OK(w.WriteHeldBatch(testing::BorrowCounted(a.array(), &releases[0])));
    ASSERT_OK(w.WriteHeldBatch(testing::BorrowCounted(grown.array(), &releases[1])));
    ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "cannot replace",
                       w.WriteHeldBatch(testing::BorrowCounted(other.array(), &releases[2])));
    ASSERT_OK(w.WriteHeldBatch(testing::BorrowCounted(more.array(), &releases[3])));
    EXPECT_EQ(w.stats().dictionary_deltas, 2);
    ASSERT_OK(w.Close());
  }
  for (int r : releases) EXPECT_EQ(r, 1);
  SharedBytes file = sink.Finish();
  ASSERT_OK_AND_ASSIGN(ipc::FileReader reader, ipc::FileReader::Open(file));
  EXPECT_EQ(reader.num_dictionaries(), 3);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(file));
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(Json::parse(read[2]),
            Json::parse(R"([{"d": "x"}, {"d": "y"}, {"d": "z"}, {"d": "w"}])"));
}

TEST(IpcWriterTest, BadInputIsRefusedWithAReason) {
  ASSERT_OK_AND_ASSIGN(Array batch, IntBatch(R"([{"x": 1}])"));
  ipc::MemorySink sink;
  ipc::WriteOptions odd;
  odd.alignment = 16;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "alignment must be 8 or 64",
                     ipc::StreamWriter::Open(&sink, batch.schema(), odd));
  const Field not_struct = Field::Make("l", "x");
  ASSERT_OK_AND_ASSIGN(UniqueSchema s, not_struct.Export());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "must be a struct",
                     ipc::StreamWriter::Open(&sink, s.get()));
  ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, batch.schema()));
  ArrowArray released{};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL or released", w.WriteBatch(&released));
  // A batch of another shape.
  ASSERT_OK_AND_ASSIGN(
      Array other,
      testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x"), Field::Make("l", "y")}),
                             R"([{"x": 1, "y": 2}])"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "batch 0", w.WriteBatch(other.array()));
  ASSERT_OK(w.Close());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "closed", w.WriteBatch(batch.array()));
}

// A batch its caller checked (here the reader's, at default validation) skips the writer's own
// check and is written byte for byte as the writer would write it after checking, for every
// type with nulls, from a sliced original.
TEST(IpcWriterTest, ACallerCheckedBatchIsWrittenAsAfterTheWritersCheck) {
  for (size_t t = 0; t < Cases().size(); ++t) {
    const TypeCase& tc = Cases()[t];
    SCOPED_TRACE(tc.name);
    auto [values, rendered] = testing::GenerateValues(tc, t * 7919 + 3, 120, true);
    Json rows = Json::array();
    for (const Json& v : values) rows.push_back(Json{{"c", v}});
    Field column = tc.field;
    column.name = "c";
    ASSERT_OK_AND_ASSIGN(Array batch, testing::SlicedArrayFromJson(testing::BatchField({column}),
                                                                   rows.dump(), 11, 100));
    ASSERT_OK_AND_ASSIGN(SharedBytes original, testing::WriteIpc(batch.schema(), {batch.array()},
                                                                 false, ipc::WriteOptions{}));
    ipc::ReadOptions checked;
    checked.validation = ValidationLevel::kDefault;
    ASSERT_OK_AND_ASSIGN(UniqueArrayStream read, ipc::ReadStream(original, checked));
    UniqueSchema schema;
    ASSERT_OK(StreamGetSchema(read.get(), schema.get()));
    UniqueArray decoded;
    ASSERT_OK(StreamGetNext(read.get(), decoded.get()));
    ASSERT_TRUE(decoded.valid());
    SharedBytes written[2];
    for (const ipc::BatchCheck check : {ipc::BatchCheck::kByWriter, ipc::BatchCheck::kByCaller}) {
      ipc::MemorySink sink;
      ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, schema.get()));
      ASSERT_OK(w.WriteBatch(decoded.get(), {}, check));
      ASSERT_OK(w.Close());
      written[static_cast<int>(check)] = sink.Finish();
    }
    ASSERT_EQ(written[0].size, written[1].size);
    EXPECT_EQ(std::memcmp(written[0].data, written[1].data, written[0].size), 0);
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> back, testing::ReadIpcAsJson(written[1]));
    ASSERT_EQ(back.size(), 1u);
    Json expected = Json::array();
    for (size_t i = 11; i < 111; ++i) expected.push_back(Json{{"c", rendered[i]}});
    EXPECT_EQ(Json::parse(back[0]), expected);
  }
}

// A writer reuses one body's room for every batch: batches of one stream that differ in shape
// (a slice whose offsets are rebased into copies, the whole array, an empty slice, a slice again)
// must each come back as written, compressed or not.
TEST(IpcWriterTest, BatchesOfEveryShapeInTurnComeBackAsWritten) {
  for (const ipc::Compression codec : {ipc::Compression::kNone, ipc::Compression::kLz4Frame}) {
    for (size_t t = 0; t < Cases().size(); ++t) {
      const TypeCase& tc = Cases()[t];
      SCOPED_TRACE(tc.name);
      auto [values, rendered] = testing::GenerateValues(tc, t * 104729 + 5, 120, true);
      Json rows = Json::array();
      for (const Json& v : values) rows.push_back(Json{{"c", v}});
      Field column = tc.field;
      column.name = "c";
      const Field root = testing::BatchField({column});
      const std::pair<int64_t, int64_t> slices[] = {{11, 100}, {0, 120}, {5, 0}, {37, 3}};
      std::vector<Array> batches;
      for (const auto& [offset, length] : slices) {
        ASSERT_OK_AND_ASSIGN(Array batch,
                             testing::SlicedArrayFromJson(root, rows.dump(), offset, length));
        batches.push_back(std::move(batch));
      }
      std::vector<const ArrowArray*> arrays;
      for (const Array& b : batches) arrays.push_back(b.array());
      ipc::WriteOptions options;
      options.compression = codec;
      ASSERT_OK_AND_ASSIGN(SharedBytes written,
                           testing::WriteIpc(batches[0].schema(), arrays, false, options));
      ASSERT_OK_AND_ASSIGN(std::vector<std::string> back, testing::ReadIpcAsJson(written));
      ASSERT_EQ(back.size(), std::size(slices));
      for (size_t k = 0; k < std::size(slices); ++k) {
        Json expected = Json::array();
        for (int64_t i = 0; i < slices[k].second; ++i) {
          expected.push_back(Json{{"c", rendered[static_cast<size_t>(slices[k].first + i)]}});
        }
        EXPECT_EQ(Json::parse(back[k]), expected) << "batch " << k;
      }
    }
  }
}

// Device batches are copied to the host through the device layer, then written. On the guarded
// device any host read of device memory would fault, so passing there shows the writer only
// touches the host copy.
class IpcDeviceWriteTest : public ::testing::TestWithParam<size_t> {
 protected:
  const testing::DeviceCase& Case() const { return testing::ConformanceDevices()[GetParam()]; }
};

TEST_P(IpcDeviceWriteTest, DeviceBatchesAreCopiedToHostAndWritten) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  const Field root = testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s"),
                                          Field::Make("+l", "list", {Field::Make("i", "item")})});
  const std::string rows =
      R"([{"x": 1, "s": "one", "list": [1, 2]}, {"x": null, "s": null, "list": null},
          {"x": 3, "s": "a string longer than twelve", "list": []}])";
  ASSERT_OK_AND_ASSIGN(Array batch, testing::SlicedArrayFromJson(root, rows, 1, 2));
  ASSERT_OK_AND_ASSIGN(std::string expected, ArrayToJson(batch.view()));
  UniqueSchema schema;
  UniqueDeviceArray host = testing::ToCpuDeviceArray(std::move(batch), &schema);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray on_device,
                       testing::CopyToDevice(schema.get(), host.get(), *device));
  for (bool file : {false, true}) {
    ipc::MemorySink sink;
    if (file) {
      ASSERT_OK_AND_ASSIGN(auto w, ipc::FileWriter::Open(&sink, schema.get()));
      ASSERT_OK(w.WriteDeviceBatch(on_device.get()));
      ASSERT_OK(w.Close());
    } else {
      ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, schema.get()));
      ASSERT_OK(w.WriteDeviceBatch(on_device.get()));
      ASSERT_OK(w.Close());
    }
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(sink.Finish()));
    ASSERT_EQ(read.size(), 1u);
    EXPECT_EQ(Json::parse(read[0]), Json::parse(expected)) << Case().name;
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, IpcDeviceWriteTest,
                         ::testing::Range<size_t>(0, testing::ConformanceDevices().size()),
                         [](const ::testing::TestParamInfo<size_t>& param_info) {
                           return testing::ConformanceDevices()[param_info.param].name;
                         });

TEST(IpcWriterTest, ReleasedDeviceBatchIsRefused) {
  ASSERT_OK_AND_ASSIGN(Array batch, IntBatch(R"([{"x": 1}])"));
  ipc::MemorySink sink;
  ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, batch.schema()));
  ArrowDeviceArray released{};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL or released",
                     w.WriteDeviceBatch(&released));
}

// What a MessageSink may keep: pieces of a plain batch are its own buffers (in_place); a
// compressed body or a bit-shifted slice is the writer's copy, valid only during the call.
class InPlaceSink final : public ipc::MessageSink {
 public:
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    if (m.has_body) {
      in_place.push_back(m.in_place);
      for (const ipc::BodyBuffer& b : m.buffers) data.push_back(b.data);
    }
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  std::vector<bool> in_place;
  std::vector<const void*> data;
};

TEST(IpcWriterTest, MessageSinkIsToldWhetherPiecesAreTheBatchsOwn) {
  ASSERT_OK_AND_ASSIGN(Array batch, IntBatch(R"([{"x": 1}, {"x": 2}, {"x": 3}])"));
  std::vector<const void*> own;
  testing::CollectBuffers(batch.array(), &own);
  {
    InPlaceSink sink;
    ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, batch.schema()));
    ASSERT_OK(w.WriteBatch(batch.array()));
    ASSERT_EQ(sink.in_place, std::vector<bool>{true});
    for (const void* p : sink.data) {
      if (p != nullptr) {
        EXPECT_NE(std::find(own.begin(), own.end(), p), own.end());
      }
    }
  }
  {
    InPlaceSink sink;
    ipc::WriteOptions options;
    options.compression = ipc::Compression::kZstd;
    ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, batch.schema(), options));
    ASSERT_OK(w.WriteBatch(batch.array()));
    EXPECT_EQ(sink.in_place, std::vector<bool>{false});
  }
  {
    const Field column = Field::Make("b", "x");
    ASSERT_OK_AND_ASSIGN(Array sliced,
                         testing::SlicedArrayFromJson(testing::BatchField({column}),
                                                      R"([{"x": true}, {"x": false}, {"x": true},
                                                          {"x": true}])",
                                                      3, 1));
    InPlaceSink sink;
    ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, sliced.schema()));
    ASSERT_OK(w.WriteBatch(sliced.array()));
    EXPECT_EQ(sink.in_place, std::vector<bool>{false});
  }
}

}  // namespace
}  // namespace ferry
