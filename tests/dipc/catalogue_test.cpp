// Kept datasets are encoded from one read of their source: a stream that can be read once, and a
// producer that gives other batches each time it is opened, are kept whole and served as first
// read, on every transport and body type; a repeatable dataset that reads differently the second
// time is refused, naming both sizes, and nothing is written past the memory the first read sized.
#include "dipc/catalogue.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dipc/server_client.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/dipc/server.hpp"

namespace ferry::dipc {
namespace {

using Json = nlohmann::json;
using testing::IntBatches;
using testing::IntData;

// A one-shot stream of `count` batches of `rows` int64 values, their rows appended to *expected.
std::shared_ptr<Dataset> OneShot(int count, int rows, std::vector<Json>* expected) {
  return Dataset::FromStream(
      ExportDeviceArrayStream(testing::IntSource(count, rows, -1, expected), ARROW_DEVICE_CPU));
}

// A stream that can be read once is kept whole: every client gets its batches, the second too.
TEST_P(ServerClient, AStreamReadOnceIsKeptWhole) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  std::vector<Json> expected;
  ASSERT_OK(server->Keep("once", OneShot(5, 700, &expected)));
  ASSERT_EQ(expected.size(), 5u);
  for (int client = 0; client < 2; ++client) {
    SCOPED_TRACE(client);
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "once"));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, expected);
  }
}

// A producer opened for each client gives more rows each time: keeping it opens it once, and
// every client gets that first read.
TEST_P(ServerClient, AProducerIsKeptFromOneRead) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto opened = std::make_shared<std::atomic<int>>(0);
  auto firsts = std::make_shared<std::vector<Json>>();
  auto dataset = Dataset::FromStreamFactory([opened, firsts]() -> Result<UniqueDeviceArrayStream> {
    const int n = ++*opened;
    std::vector<Json> expected;
    auto source = testing::IntSource(2, 100 * n, -1, &expected);
    if (n == 1) *firsts = expected;
    return ExportDeviceArrayStream(std::move(source), ARROW_DEVICE_CPU);
  });
  ASSERT_OK(server->Keep("grows", dataset));
  EXPECT_EQ(opened->load(), 1);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "grows"));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
  EXPECT_EQ(got, *firsts);
  EXPECT_EQ(opened->load(), 1);
}

// A reader that lends each batch only until the next call and cannot give it up (TakeBatch's
// default), behind a dataset that does not say it is repeatable.
class LendingReader final : public DatasetReader {
 public:
  explicit LendingReader(std::unique_ptr<DatasetReader> inner) : inner_(std::move(inner)) {}
  const ArrowSchema* schema() const noexcept override { return inner_->schema(); }
  Result<const ArrowDeviceArray*> Next() override { return inner_->Next(); }

 private:
  std::unique_ptr<DatasetReader> inner_;
};

class LendingDataset final : public Dataset {
 public:
  explicit LendingDataset(std::shared_ptr<Dataset> inner) : inner_(std::move(inner)) {}
  Result<std::unique_ptr<DatasetReader>> Open() override {
    FERRY_ASSIGN_OR_RAISE(std::unique_ptr<DatasetReader> inner, inner_->Open());
    return std::unique_ptr<DatasetReader>(std::make_unique<LendingReader>(std::move(inner)));
  }

 private:
  std::shared_ptr<Dataset> inner_;
};

// Its batches are copied as they are read: what is held outlives the source's memory.
TEST(EncodeKept, ABatchItsReaderKeepsIsCopiedAsRead) {
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(3, 400));
  std::shared_ptr<Dataset> held;
  {
    LendingDataset dataset(std::exchange(data.dataset, nullptr));
    EXPECT_FALSE(dataset.repeatable());
    ASSERT_OK_AND_ASSIGN(held, internal::HoldForKeeping(dataset));
  }  // the source's batches are freed here
  ASSERT_NE(held, nullptr);
  EXPECT_TRUE(held->repeatable());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DatasetReader> reader, held->Open());
  std::vector<Json> got;
  while (true) {
    ASSERT_OK_AND_ASSIGN(const ArrowDeviceArray* b, reader->Next());
    if (b == nullptr) break;
    got.push_back(Json::parse(testing::DeviceArrayToJson(reader->schema(), b)));
  }
  EXPECT_EQ(got, data.expected);
}

// A repeatable dataset is read twice, itself: no batches are held.
TEST(EncodeKept, ARepeatableDatasetIsNotHeld) {
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(2, 10));
  EXPECT_TRUE(data.dataset->repeatable());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Dataset> held, internal::HoldForKeeping(*data.dataset));
  EXPECT_EQ(held, nullptr);
}

// Says it is repeatable, and gives one more batch on every Open.
class LyingDataset final : public Dataset {
 public:
  bool repeatable() const noexcept override { return true; }
  Result<std::unique_ptr<DatasetReader>> Open() override {
    FERRY_ASSIGN_OR_RAISE(IntData data, IntBatches(++opens_, 1000, false));
    datasets_.push_back(data.dataset);
    return data.dataset->Open();
  }

 private:
  int opens_ = 0;
  std::vector<std::shared_ptr<Dataset>> datasets_;  // each reader's batches
};

// The first read sizes the memory; a second read that comes out larger is refused before a byte
// of it lands past that memory (the sanitizer builds would see one), naming both sizes.
TEST(EncodeKept, ARepeatableDatasetThatGrowsIsRefused) {
  LyingDataset dataset;
  int64_t made = 0;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "the dataset read differently when it was read again to be kept (8128 bytes "
                     "the first time, over 16192 the second)",
                     internal::EncodeKept(dataset, {}, [&](int64_t size) {
                       made = size;
                       return internal::MakeHostRegion(size);
                     }).status());
  // Each message takes its body and a spare byte, in steps of 64: the schema's 64 bytes, and a
  // batch of 1,000 int64 values 8,064. The second read's second batch is what overflows.
  EXPECT_EQ(made, 64 + 8064);
}

// Bodies at 64-byte steps with a spare byte each, worked out by hand; the limited pass refuses
// running past the count, and one that ends short.
TEST(KeptLayout, PlacesBodiesAtStepsAndHoldsTheSecondPassToTheFirst) {
  internal::KeptLayout counting;
  ASSERT_OK_AND_ASSIGN(int64_t schema, counting.Place(0));
  ASSERT_OK_AND_ASSIGN(int64_t batch, counting.Place(8000));
  ASSERT_OK_AND_ASSIGN(int64_t exact, counting.Place(63));
  EXPECT_EQ(schema, 0);
  EXPECT_EQ(batch, 64);
  EXPECT_EQ(exact, 64 + 8064);
  EXPECT_EQ(counting.used(), 64 + 8064 + 64);
  ASSERT_OK(counting.Finish());
  internal::KeptLayout limited(128);
  ASSERT_OK(limited.Place(0).status());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "(128 bytes the first time, over 192 the second)",
                     limited.Place(64).status());  // 64 bytes and the spare byte: 128
  internal::KeptLayout short_pass(128);
  ASSERT_OK(short_pass.Place(0).status());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "(128 bytes the first time, 64 the second)",
                     short_pass.Finish());
}

}  // namespace
}  // namespace ferry::dipc
