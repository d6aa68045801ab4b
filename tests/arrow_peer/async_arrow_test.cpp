// The Async C Device Stream Interface against Arrow C++ from the pyarrow wheel, both ways:
// Arrow C++ produces (ExportAsyncRecordBatchReader) and ferry's handler reads; ferry's producer
// drives Arrow C++'s handler (CreateAsyncDeviceStreamHandler). Each way carries the data equal
// (checked against the other library's own arrays, and against values written out by hand), an
// error in the middle of the stream, and a cancel in the middle of the stream.
#include <arrow/api.h>
#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/async_generator.h>
#include <arrow/util/thread_pool.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ferry/core/status_code.hpp"
#include "ferry/device/async_stream.hpp"
#include "ferry/device/device_array_stream.hpp"
#include "ferry/format/array.hpp"
#include "ferry/ipc/reader.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kLimit{20000};
constexpr double kArrowLimitS = 20.0;

// Row i of batch b: x = 10 * b + i, s = "r<b>-<i>", with s null in row 1.
constexpr int kRows = 3;

std::string RowsJson(int b) {
  std::string out = "[";
  for (int i = 0; i < kRows; ++i) {
    if (i > 0) out += ", ";
    out += "{\"x\": " + std::to_string(10 * b + i) + ", \"s\": ";
    out += i == 1 ? "null" : "\"r" + std::to_string(b) + "-" + std::to_string(i) + "\"";
    out += "}";
  }
  return out + "]";
}

std::shared_ptr<arrow::Schema> ArrowSchemaOfRows() {
  return arrow::schema({arrow::field("x", arrow::int64()), arrow::field("s", arrow::utf8())});
}

// Batch b built with Arrow C++'s own builders.
std::shared_ptr<arrow::RecordBatch> ArrowBatch(int b) {
  arrow::Int64Builder xs;
  arrow::StringBuilder ss;
  for (int i = 0; i < kRows; ++i) {
    EXPECT_TRUE(xs.Append(10 * b + i).ok());
    EXPECT_TRUE(
        (i == 1 ? ss.AppendNull() : ss.Append("r" + std::to_string(b) + "-" + std::to_string(i)))
            .ok());
  }
  return arrow::RecordBatch::Make(ArrowSchemaOfRows(), kRows,
                                  {xs.Finish().ValueOrDie(), ss.Finish().ValueOrDie()});
}

// Batch b built with ferry from its JSON.
UniqueDeviceArray FerryBatch(int b, UniqueSchema* schema) {
  const Field root = testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s")});
  Result<Array> a = testing::ArrayFromJson(root, RowsJson(b));
  EXPECT_TRUE(a.ok()) << a.status().message();
  return testing::ToCpuDeviceArray(std::move(a).ValueOrDie(), schema);
}

// ferry's batches 0..count-1, failing at `fail_at` with `failure`; counts reads and lifetimes.
class FerrySource final : public DeviceArrayProducer {
 public:
  FerrySource(int count, std::atomic<int>* reads, int fail_at = -1, Status failure = Status::OK())
      : count_(count), reads_(reads), fail_at_(fail_at), failure_(std::move(failure)) {}
  Status GetSchema(ArrowSchema* out) override {
    UniqueSchema schema;
    FerryBatch(0, &schema);
    schema.move_to(out);
    return Status::OK();
  }
  Status GetNext(ArrowDeviceArray* out) override {
    ++*reads_;
    if (next_ == fail_at_) return failure_;
    if (next_ == count_) return Status::OK();
    UniqueSchema schema;
    FerryBatch(next_++, &schema).move_to(out);
    return Status::OK();
  }

 private:
  int count_;
  std::atomic<int>* reads_;
  int fail_at_;
  Status failure_;
  int next_ = 0;
};

// --- Arrow C++ produces, ferry consumes ---------------------------------------------------------

// Arrow C++'s export, on a thread of its own: ExportAsyncRecordBatchReader drives a generator
// whose futures are already finished on the calling thread, waiting there for requests. The
// outcome (its returned future's status) arrives through `outcome`.
class ArrowExport {
 public:
  ArrowExport(arrow::AsyncGenerator<std::shared_ptr<arrow::RecordBatch>> gen,
              ArrowAsyncDeviceStreamHandler* handler) {
    outcome_ = promise_.get_future();
    thread_ = std::thread([this, gen = std::move(gen), handler]() mutable {
      arrow::Future<> done = arrow::ExportAsyncRecordBatchReader(
          ArrowSchemaOfRows(), std::move(gen), arrow::DeviceAllocationType::kCPU, handler);
      promise_.set_value(done.Wait(kArrowLimitS) ? done.status()
                                                 : arrow::Status::Invalid("export never ended"));
    });
  }
  ~ArrowExport() { thread_.join(); }
  // The export's status, or nullopt when it has not ended within the limit.
  std::optional<arrow::Status> Outcome() {
    if (outcome_.wait_for(kLimit) != std::future_status::ready) return std::nullopt;
    return outcome_.get();
  }

 private:
  std::promise<arrow::Status> promise_;
  std::future<arrow::Status> outcome_;
  std::thread thread_;
};

struct FerryReader {
  ArrowAsyncDeviceStreamHandler handler{};
  UniqueDeviceArrayStream stream;
  FerryReader() {
    AsyncHandlerOptions options;
    options.queue_size = 2;
    options.timeout = kLimit;
    EXPECT_OK(AsyncHandlerToStream(&handler, stream.get(), options));
  }
};

TEST(ArrowProducesFerryConsumes, DataArrivesEqualAndUncopied) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (int b = 0; b < 4; ++b) batches.push_back(ArrowBatch(b));
  FerryReader reader;
  ArrowExport exporter(arrow::MakeVectorGenerator(batches), &reader.handler);
  UniqueSchema schema;
  ASSERT_EQ(reader.stream->get_schema(reader.stream.get(), schema.get()), 0);
  EXPECT_STREQ(schema->format, "+s");
  EXPECT_EQ(reader.stream->device_type, ARROW_DEVICE_CPU);
  for (int b = 0; b < 4; ++b) {
    UniqueDeviceArray got;
    ASSERT_EQ(reader.stream->get_next(reader.stream.get(), got.get()), 0)
        << reader.stream->get_last_error(reader.stream.get());
    ASSERT_TRUE(got.valid());
    EXPECT_EQ(got->device_type, ARROW_DEVICE_CPU);
    // Zero copy: the x column's values are Arrow's own buffer.
    EXPECT_EQ(got->array.children[0]->buffers[1],
              batches[b]->column(0)->data()->buffers[1]->data());
    // The values, as ferry reads them, against the rows written out by hand.
    EXPECT_EQ(nlohmann::json::parse(testing::DeviceArrayToJson(schema.get(), got.get())),
              nlohmann::json::parse(RowsJson(b)));
    // And as Arrow C++ reads them back, against its own batch.
    auto back = arrow::ImportDeviceRecordBatch(got.get(), ArrowSchemaOfRows());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE((*back)->Equals(*batches[b]));
  }
  UniqueDeviceArray end;
  ASSERT_EQ(reader.stream->get_next(reader.stream.get(), end.get()), 0);
  EXPECT_FALSE(end.valid());
  std::optional<arrow::Status> outcome = exporter.Outcome();
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->ok()) << outcome->ToString();
}

TEST(ArrowProducesFerryConsumes, AnErrorMidStreamReachesTheReader) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> first = {ArrowBatch(0), ArrowBatch(1)};
  arrow::AsyncGenerator<std::shared_ptr<arrow::RecordBatch>> gen = arrow::MakeConcatenatedGenerator(
      arrow::MakeVectorGenerator<arrow::AsyncGenerator<std::shared_ptr<arrow::RecordBatch>>>(
          {arrow::MakeVectorGenerator(first),
           arrow::MakeFailingGenerator<std::shared_ptr<arrow::RecordBatch>>(
               arrow::Status::IOError("the source file was truncated"))}));
  FerryReader reader;
  ArrowExport exporter(std::move(gen), &reader.handler);
  UniqueSchema schema;
  ASSERT_EQ(reader.stream->get_schema(reader.stream.get(), schema.get()), 0);
  for (int b = 0; b < 2; ++b) {
    UniqueDeviceArray got;
    ASSERT_EQ(reader.stream->get_next(reader.stream.get(), got.get()), 0);
    EXPECT_EQ(nlohmann::json::parse(testing::DeviceArrayToJson(schema.get(), got.get())),
              nlohmann::json::parse(RowsJson(b)));
  }
  UniqueDeviceArray got;
  const int code = reader.stream->get_next(reader.stream.get(), got.get());
  EXPECT_NE(code, 0);
  EXPECT_FALSE(got.valid());
  EXPECT_THAT(std::string(reader.stream->get_last_error(reader.stream.get())),
              ::testing::HasSubstr("the source file was truncated"));
  std::optional<arrow::Status> outcome = exporter.Outcome();
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->IsIOError()) << outcome->ToString();
}

TEST(ArrowProducesFerryConsumes, ReleasingTheReaderCancelsArrow) {
  auto made = std::make_shared<std::atomic<int>>(0);
  arrow::AsyncGenerator<std::shared_ptr<arrow::RecordBatch>> gen =
      [made]() -> arrow::Future<std::shared_ptr<arrow::RecordBatch>> {
    const int b = (*made)++;
    if (b == 1000) return arrow::AsyncGeneratorEnd<std::shared_ptr<arrow::RecordBatch>>();
    return arrow::Future<std::shared_ptr<arrow::RecordBatch>>::MakeFinished(ArrowBatch(b));
  };
  auto reader = std::make_unique<FerryReader>();
  ArrowExport exporter(std::move(gen), &reader->handler);
  UniqueDeviceArray got;
  ASSERT_EQ(reader->stream->get_next(reader->stream.get(), got.get()), 0);
  EXPECT_EQ(got->array.length, kRows);
  reader->stream.reset();  // cancels Arrow's producer
  std::optional<arrow::Status> outcome = exporter.Outcome();
  ASSERT_TRUE(outcome.has_value()) << "Arrow's producer did not stop after the cancel";
  EXPECT_LT(made->load(), 1000);
}

// --- ferry produces, Arrow C++ consumes ---------------------------------------------------------

// Read Arrow's generator to its end or its first error.
struct ArrowRead {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  arrow::Status status;
};

ArrowRead ReadAll(const arrow::AsyncRecordBatchGenerator& gen, int at_most = 1 << 30) {
  ArrowRead out;
  for (int i = 0; i < at_most; ++i) {
    arrow::Future<arrow::RecordBatchWithMetadata> next = gen.generator();
    if (!next.Wait(kArrowLimitS)) {
      out.status = arrow::Status::Invalid("no batch from ferry in time");
      return out;
    }
    const auto& r = next.result();
    if (!r.ok()) {
      out.status = r.status();
      return out;
    }
    if (r->batch == nullptr) return out;
    out.batches.push_back(r->batch);
  }
  return out;
}

TEST(FerryProducesArrowConsumes, DataArrivesEqual) {
  ArrowAsyncDeviceStreamHandler handler{};
  auto ready = arrow::CreateAsyncDeviceStreamHandler(&handler, arrow::internal::GetCpuThreadPool(),
                                                     /*queue_size=*/2);
  std::atomic<int> reads{0};
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(std::make_unique<FerrySource>(5, &reads),
                                                   ARROW_DEVICE_CPU, &handler));
  ASSERT_TRUE(ready.Wait(kArrowLimitS));
  ASSERT_TRUE(ready.status().ok()) << ready.status().ToString();
  const arrow::AsyncRecordBatchGenerator& gen = ready.result().ValueOrDie();
  EXPECT_TRUE(gen.schema->Equals(*ArrowSchemaOfRows()));
  EXPECT_EQ(gen.device_type, arrow::DeviceAllocationType::kCPU);
  ArrowRead read = ReadAll(gen);
  ASSERT_TRUE(read.status.ok()) << read.status.ToString();
  ASSERT_EQ(read.batches.size(), 5u);
  for (int b = 0; b < 5; ++b) {
    EXPECT_TRUE(read.batches[b]->Equals(*ArrowBatch(b))) << read.batches[b]->ToString();
  }
  ASSERT_OK(producer->Wait(kLimit));
  const AsyncProducerCounters c = producer->counters();
  EXPECT_LE(c.pulled, c.requested);
  EXPECT_EQ(c.delivered, 5);
}

TEST(FerryProducesArrowConsumes, AnErrorMidStreamReachesArrow) {
  ArrowAsyncDeviceStreamHandler handler{};
  auto ready =
      arrow::CreateAsyncDeviceStreamHandler(&handler, arrow::internal::GetCpuThreadPool(), 2);
  std::atomic<int> reads{0};
  ASSERT_OK_AND_ASSIGN(
      auto producer,
      ProduceAsync(std::make_unique<FerrySource>(5, &reads, 2,
                                                 Status::IOError("the dipc plane dropped batch 2")),
                   ARROW_DEVICE_CPU, &handler));
  ASSERT_TRUE(ready.Wait(kArrowLimitS));
  ASSERT_TRUE(ready.status().ok()) << ready.status().ToString();
  ArrowRead read = ReadAll(ready.result().ValueOrDie());
  // Arrow C++ may report the error before the batches still queued ahead of it (it does, now and
  // then): what arrives before the error is a prefix of the batches sent.
  EXPECT_LE(read.batches.size(), 2u);
  for (size_t b = 0; b < read.batches.size(); ++b) {
    EXPECT_TRUE(read.batches[b]->Equals(*ArrowBatch(static_cast<int>(b))));
  }
  ASSERT_FALSE(read.status.ok());
  EXPECT_THAT(read.status.ToString(), ::testing::HasSubstr("the dipc plane dropped batch 2"));
  // on_error carried EIO, the error table's code for IOError; Arrow C++ 26 makes every
  // on_error an UnknownError with the message, so the code shows on ferry's side only.
  EXPECT_TRUE(read.status.IsUnknownError()) << read.status.ToString();
  ASSERT_RAISES_WITH(StatusCode::kIOError, "dropped batch 2", producer->Wait(kLimit));
}

TEST(FerryProducesArrowConsumes, ACancelMidStreamEndsTheRead) {
  ArrowAsyncDeviceStreamHandler handler{};
  auto ready =
      arrow::CreateAsyncDeviceStreamHandler(&handler, arrow::internal::GetCpuThreadPool(), 1);
  std::atomic<int> reads{0};
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(std::make_unique<FerrySource>(1000, &reads),
                                                   ARROW_DEVICE_CPU, &handler));
  ASSERT_TRUE(ready.Wait(kArrowLimitS));
  ASSERT_TRUE(ready.status().ok());
  ArrowRead first = ReadAll(ready.result().ValueOrDie(), 2);
  ASSERT_EQ(first.batches.size(), 2u);
  // Arrow C++'s generator has no cancel of its own: the consumer cancels through the producer
  // the handler was given, as the interface has it.
  handler.producer->cancel(handler.producer);
  ASSERT_OK(producer->Wait(kLimit));
  EXPECT_TRUE(producer->counters().cancelled);
  EXPECT_LT(reads.load(), 1000);
  // Arrow C++ reads ahead of its own consumer (requesting as its background queue drains), so
  // what follows the cancel is what it had requested and ferry had delivered before it, then the
  // end.
  ArrowRead rest = ReadAll(ready.result().ValueOrDie());
  EXPECT_TRUE(rest.status.ok()) << rest.status.ToString();
  const AsyncProducerCounters c = producer->counters();
  EXPECT_EQ(static_cast<int64_t>(first.batches.size() + rest.batches.size()), c.delivered);
  EXPECT_LE(c.delivered, c.requested);
  EXPECT_LE(c.pulled, c.requested);
}

// ferry's IPC stream reader as the source: Arrow C++ writes the IPC stream, ferry reads it and
// produces it, and Arrow C++'s handler gets its own batches back.
TEST(FerryProducesArrowConsumes, AnIpcStreamReadByFerryArrivesEqual) {
  auto sink = arrow::io::BufferOutputStream::Create().ValueOrDie();
  auto writer = arrow::ipc::MakeStreamWriter(sink, ArrowSchemaOfRows()).ValueOrDie();
  for (int b = 0; b < 3; ++b) ASSERT_TRUE(writer->WriteRecordBatch(*ArrowBatch(b)).ok());
  ASSERT_TRUE(writer->Close().ok());
  std::shared_ptr<arrow::Buffer> bytes = sink->Finish().ValueOrDie();
  ASSERT_OK_AND_ASSIGN(SharedBytes copy, SharedBytes::Copy(ByteSpan(bytes->data(), bytes->size())));
  ASSERT_OK_AND_ASSIGN(UniqueArrayStream read, ipc::ReadStream(std::move(copy)));
  UniqueDeviceArrayStream source;
  ASSERT_OK(BasicDeviceArrayStreamInit(source.get(), read.get(), *CpuDevice()));

  ArrowAsyncDeviceStreamHandler handler{};
  auto ready =
      arrow::CreateAsyncDeviceStreamHandler(&handler, arrow::internal::GetCpuThreadPool(), 2);
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(std::move(source), &handler));
  ASSERT_TRUE(ready.Wait(kArrowLimitS));
  ASSERT_TRUE(ready.status().ok()) << ready.status().ToString();
  ArrowRead got = ReadAll(ready.result().ValueOrDie());
  ASSERT_TRUE(got.status.ok()) << got.status.ToString();
  ASSERT_EQ(got.batches.size(), 3u);
  for (int b = 0; b < 3; ++b) EXPECT_TRUE(got.batches[b]->Equals(*ArrowBatch(b)));
  ASSERT_OK(producer->Wait(kLimit));
}

}  // namespace
}  // namespace ferry
