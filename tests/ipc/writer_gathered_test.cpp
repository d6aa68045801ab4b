// WriteHeldBatches: a group of batches framed one after the other and written at once. The oracle
// is the same batches written one at a time with WriteHeldBatch (whose bytes the conformance suite
// and pyarrow check): byte for byte the same stream or file, for every type case, sliced or not,
// compressed or not. A counting sink shows the one write, and release counters that every batch
// is released once, written or not.
#include <cstring>
#include <nlohmann/json.hpp>

#include "ferry/ipc/writer.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"
#include "support/type_cases.hpp"

namespace ferry {
namespace {

using testing::Json;

// A MemorySink that counts its writes, and refuses the next one (writing nothing) when told.
class CountingSink final : public ipc::Sink {
 public:
  Status Write(std::span<const ByteSpan> pieces) override {
    ++writes_;
    if (refuse_next_) {
      refuse_next_ = false;
      return Status::IOError("the sink refused write " + std::to_string(writes_));
    }
    return memory_.Write(pieces);
  }
  void RefuseNext() { refuse_next_ = true; }
  int64_t position() const noexcept override { return memory_.position(); }
  int writes() const { return writes_; }
  SharedBytes Finish() { return memory_.Finish(); }

 private:
  ipc::MemorySink memory_;
  int writes_ = 0;
  bool refuse_next_ = false;
};

// A group over `batches` (borrowed, no copy), batch i's releases counted in `releases[i]`.
std::vector<UniqueDeviceArray> Group(const std::vector<const ArrowArray*>& batches, int* releases) {
  std::vector<UniqueDeviceArray> group;
  for (size_t i = 0; i < batches.size(); ++i) {
    group.push_back(testing::BorrowCounted(batches[i], &releases[i]));
  }
  return group;
}

// `batches` written by a stream or file writer with `options`, as one group or one at a time.
// `writes`: the sink's writes after the schema (and a file's magic) until Close.
Result<SharedBytes> Write(const ArrowSchema* schema, const std::vector<const ArrowArray*>& batches,
                          bool file, ipc::WriteOptions options, bool grouped,
                          std::vector<int>* releases, int* writes) {
  CountingSink sink;
  releases->assign(batches.size(), 0);
  std::vector<UniqueDeviceArray> group = Group(batches, releases->data());
  auto write = [&](auto& w) -> Status {
    const int before = sink.writes();
    if (grouped) {
      FERRY_RETURN_NOT_OK(w.WriteHeldBatches(group));
    } else {
      for (UniqueDeviceArray& b : group) FERRY_RETURN_NOT_OK(w.WriteHeldBatch(std::move(b)));
    }
    *writes = sink.writes() - before;
    return w.Close();
  };
  if (file) {
    FERRY_ASSIGN_OR_RAISE(auto w, ipc::FileWriter::Open(&sink, schema, options));
    FERRY_RETURN_NOT_OK(write(w));
  } else {
    FERRY_ASSIGN_OR_RAISE(auto w, ipc::StreamWriter::Open(&sink, schema, options));
    FERRY_RETURN_NOT_OK(write(w));
  }
  return sink.Finish();
}

bool HasDictionary(const Field& f) {
  if (f.dictionary) return true;
  for (const Field& c : f.children) {
    if (HasDictionary(c)) return true;
  }
  return false;
}

class IpcGatheredTest : public ::testing::TestWithParam<size_t> {};

TEST_P(IpcGatheredTest, AGroupIsTheBytesOfItsBatchesWrittenOneAtATime) {
  const testing::TypeCase& tc = testing::TypeCases()[GetParam()];
  auto [values, rendered] = testing::GenerateValues(tc, GetParam() * 7919 + 3, 40, true);
  Json rows = Json::array();
  for (const Json& v : values) rows.push_back(Json{{"c", v}});
  Field column = tc.field;
  column.name = "c";
  const Field root = testing::BatchField({column});
  // Whole, then sliced at an odd offset (bitmaps shifted and offsets rebased into the writer's
  // copies, which the group keeps until it is written).
  ASSERT_OK_AND_ASSIGN(Array whole, testing::SlicedArrayFromJson(root, rows.dump(), 0, 40));
  ASSERT_OK_AND_ASSIGN(Array sliced, testing::SlicedArrayFromJson(root, rows.dump(), 3, 29));
  const std::vector<const ArrowArray*> batches{whole.array(), sliced.array(), whole.array(),
                                               sliced.array()};
  for (ipc::Compression compression :
       {ipc::Compression::kNone, ipc::Compression::kLz4Frame, ipc::Compression::kZstd}) {
    for (bool file : {false, true}) {
      ipc::WriteOptions options;
      options.compression = compression;
      std::vector<int> one_releases, group_releases;
      int one_writes = 0, group_writes = 0;
      ASSERT_OK_AND_ASSIGN(SharedBytes one, Write(whole.schema(), batches, file, options, false,
                                                  &one_releases, &one_writes));
      ASSERT_OK_AND_ASSIGN(SharedBytes grouped, Write(whole.schema(), batches, file, options, true,
                                                      &group_releases, &group_writes));
      const std::string what = tc.name + (file ? ", file" : ", stream") + ", compression " +
                               std::to_string(static_cast<int>(compression));
      ASSERT_EQ(grouped.size, one.size) << what;
      EXPECT_EQ(std::memcmp(grouped.data, one.data, static_cast<size_t>(one.size)), 0) << what;
      EXPECT_EQ(group_releases, std::vector<int>(batches.size(), 1)) << what;
      // Dictionaries go one batch at a time; everything else in one write.
      EXPECT_EQ(group_writes, HasDictionary(column) ? one_writes : 1) << what;
      ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(grouped));
      ASSERT_EQ(read.size(), batches.size()) << what;
      EXPECT_EQ(Json::parse(read[3]).size(), 29u) << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, IpcGatheredTest,
                         ::testing::Range<size_t>(0, testing::TypeCases().size()),
                         [](const ::testing::TestParamInfo<size_t>& param_info) {
                           return testing::TypeCases()[param_info.param].name;
                         });

// A batch that fails its check stops the group: the batches before it are written, in one
// write, the error names it, and it and those after it are released unwritten.
TEST(IpcGatheredTest, AFailureWritesTheBatchesBeforeItAndReleasesEveryBatch) {
  const Field root = testing::BatchField({Field::Make("l", "x")});
  ASSERT_OK_AND_ASSIGN(Array good, testing::ArrayFromJson(root, R"([{"x": 1}, {"x": 2}])"));
  const Field other_root = testing::BatchField({Field::Make("l", "x"), Field::Make("l", "y")});
  ASSERT_OK_AND_ASSIGN(Array other, testing::ArrayFromJson(other_root, R"([{"x": 1, "y": 2}])"));
  CountingSink sink;
  ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, good.schema()));
  int releases[4] = {};
  std::vector<UniqueDeviceArray> group =
      Group({good.array(), good.array(), other.array(), good.array()}, releases);
  const int before = sink.writes();
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "batch 2", w.WriteHeldBatches(group));
  EXPECT_EQ(sink.writes() - before, 1);
  for (int r : releases) EXPECT_EQ(r, 1);
  EXPECT_EQ(w.stats().record_batches, 2);
  ASSERT_OK(w.Close());
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(sink.Finish()));
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(Json::parse(read[1]), Json::parse(R"([{"x": 1}, {"x": 2}])"));
}

// A group whose write the sink refuses counts as unwritten: a file writer that goes on lists only
// the batches written since in its footer, and the file reads back as those.
TEST(IpcGatheredTest, AGroupTheSinkRefusesIsNotCountedNorListed) {
  const Field root = testing::BatchField({Field::Make("l", "x")});
  ASSERT_OK_AND_ASSIGN(Array lost, testing::ArrayFromJson(root, R"([{"x": 1}])"));
  ASSERT_OK_AND_ASSIGN(Array kept, testing::ArrayFromJson(root, R"([{"x": 2}, {"x": 3}])"));
  CountingSink sink;
  ASSERT_OK_AND_ASSIGN(auto w, ipc::FileWriter::Open(&sink, lost.schema()));
  int releases[3] = {};
  std::vector<UniqueDeviceArray> group = Group({lost.array(), lost.array()}, releases);
  sink.RefuseNext();
  ASSERT_RAISES_WITH(StatusCode::kIOError, "refused", w.WriteHeldBatches(group));
  EXPECT_EQ(releases[0], 1);
  EXPECT_EQ(releases[1], 1);
  EXPECT_EQ(w.stats().record_batches, 0);
  EXPECT_EQ(w.stats().messages, 1);  // the schema
  group = Group({kept.array()}, &releases[2]);
  ASSERT_OK(w.WriteHeldBatches(group));
  ASSERT_OK(w.Close());
  EXPECT_EQ(w.stats().record_batches, 1);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(sink.Finish()));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(Json::parse(read[0]), Json::parse(R"([{"x": 2}, {"x": 3}])"));
}

// A device batch in a group is copied to the host and written in its place, after the host
// batches before it; the batches after it form the next write.
class IpcGatheredDeviceTest : public ::testing::TestWithParam<size_t> {
 protected:
  const testing::DeviceCase& Case() const { return testing::ConformanceDevices()[GetParam()]; }
};

TEST_P(IpcGatheredDeviceTest, ADeviceBatchIsWrittenInItsPlace) {
  FERRY_RESOLVE_OR_SKIP(device, Case());
  const Field root = testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s")});
  ASSERT_OK_AND_ASSIGN(Array first, testing::ArrayFromJson(root, R"([{"x": 1, "s": "a"}])"));
  ASSERT_OK_AND_ASSIGN(
      Array middle, testing::ArrayFromJson(root, R"([{"x": 2, "s": null}, {"x": 3, "s": "c"}])"));
  ASSERT_OK_AND_ASSIGN(Array last, testing::ArrayFromJson(root, R"([{"x": null, "s": "d"}])"));
  std::vector<std::string> expected;
  for (const Array* a : {&first, &middle, &last}) {
    ASSERT_OK_AND_ASSIGN(std::string json, ArrayToJson(a->view()));
    expected.push_back(json);
  }
  UniqueSchema schema;
  UniqueDeviceArray host = testing::ToCpuDeviceArray(std::move(middle), &schema);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray on_device,
                       testing::CopyToDevice(schema.get(), host.get(), *device));
  const bool copied = on_device->device_type != ARROW_DEVICE_CPU;
  CountingSink sink;
  ASSERT_OK_AND_ASSIGN(auto w, ipc::StreamWriter::Open(&sink, schema.get()));
  int releases[2] = {};
  std::vector<UniqueDeviceArray> group;
  group.push_back(testing::BorrowCounted(first.array(), &releases[0]));
  group.push_back(std::move(on_device));
  group.push_back(testing::BorrowCounted(last.array(), &releases[1]));
  const int before = sink.writes();
  ASSERT_OK(w.WriteHeldBatches(group));
  // On a device: the first batch, the copy, then the last; on the CPU, one write.
  EXPECT_EQ(sink.writes() - before, copied ? 3 : 1) << Case().name;
  EXPECT_EQ(releases[0], 1);
  EXPECT_EQ(releases[1], 1);
  EXPECT_FALSE(group[1].valid());
  ASSERT_OK(w.Close());
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> read, testing::ReadIpcAsJson(sink.Finish()));
  ASSERT_EQ(read.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(Json::parse(read[i]), Json::parse(expected[i])) << Case().name << " batch " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevices, IpcGatheredDeviceTest,
                         ::testing::Range<size_t>(0, testing::ConformanceDevices().size()),
                         [](const ::testing::TestParamInfo<size_t>& param_info) {
                           return testing::ConformanceDevices()[param_info.param].name;
                         });

}  // namespace
}  // namespace ferry
