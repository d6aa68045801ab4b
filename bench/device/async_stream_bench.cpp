// The async stream hop's fixed cost per batch: ferry's producer feeding ferry's handler read back
// as a stream, against Arrow C++'s own pair (ExportAsyncRecordBatchReader feeding
// CreateAsyncDeviceStreamHandler) in the same run. The batches are empty int32 arrays, so only
// the hand-off is measured (a thread hop per batch, paced by request(n)).
#include <benchmark/benchmark.h>

#include <memory>
#include <thread>
#include <vector>

#include "bench_scale.hpp"
#include "ferry/device/async_stream.hpp"
#include "ferry/format/schema.hpp"

#ifdef FERRY_BENCH_WITH_ARROW
#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <arrow/util/async_generator.h>
#include <arrow/util/thread_pool.h>
#endif

namespace ferry {
namespace {

const int kBatches = testing::SmokeRun() ? 100 : 20000;

// `count` empty int32 arrays (no buffers to free), then the end.
class EmptyBatches final : public DeviceArrayProducer {
 public:
  explicit EmptyBatches(int count) : left_(count) {}
  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema s, Field::Make("i", "x").Export());
    s.move_to(out);
    return Status::OK();
  }
  Status GetNext(ArrowDeviceArray* out) override {
    if (left_-- == 0) return Status::OK();
    static const void* buffers[2] = {nullptr, nullptr};
    out->array.n_buffers = 2;
    out->array.buffers = buffers;
    out->array.release = [](ArrowArray* a) { a->release = nullptr; };
    out->device_type = ARROW_DEVICE_CPU;
    return Status::OK();
  }

 private:
  int left_;
};

void BM_FerryAsyncPair(benchmark::State& state) {
  const int64_t queue = state.range(0);
  for (auto _ : state) {
    ArrowAsyncDeviceStreamHandler handler{};
    UniqueDeviceArrayStream reader;
    AsyncHandlerOptions options;
    options.queue_size = queue;
    if (!AsyncHandlerToStream(&handler, reader.get(), options).ok()) state.SkipWithError("init");
    auto producer =
        ProduceAsync(std::make_unique<EmptyBatches>(kBatches), ARROW_DEVICE_CPU, &handler);
    int n = 0;
    for (;;) {
      UniqueDeviceArray a;
      if (!StreamGetNext(reader.get(), a.get()).ok()) state.SkipWithError("read");
      if (!a.valid()) break;
      ++n;
    }
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * kBatches);
}
BENCHMARK(BM_FerryAsyncPair)->Arg(1)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

#ifdef FERRY_BENCH_WITH_ARROW
void BM_ArrowAsyncPair(benchmark::State& state) {
  const int64_t queue = state.range(0);
  auto schema = arrow::schema({arrow::field("x", arrow::int32())});
  auto empty =
      arrow::RecordBatch::Make(schema, 0, {arrow::MakeEmptyArray(arrow::int32()).ValueOrDie()});
  for (auto _ : state) {
    ArrowAsyncDeviceStreamHandler handler{};
    auto ready = arrow::CreateAsyncDeviceStreamHandler(
        &handler, arrow::internal::GetCpuThreadPool(), static_cast<uint64_t>(queue));
    std::thread exporter([&] {
      std::vector<std::shared_ptr<arrow::RecordBatch>> batches(kBatches, empty);
      arrow::ExportAsyncRecordBatchReader(schema, arrow::MakeVectorGenerator(std::move(batches)),
                                          arrow::DeviceAllocationType::kCPU, &handler)
          .Wait();
    });
    const arrow::AsyncRecordBatchGenerator& gen = ready.result().ValueOrDie();
    int n = 0;
    for (;;) {
      auto next = gen.generator().result();
      if (!next.ok()) state.SkipWithError("read");
      if (!next.ok() || next->batch == nullptr) break;
      ++n;
    }
    exporter.join();
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * kBatches);
}
BENCHMARK(BM_ArrowAsyncPair)->Arg(1)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace
}  // namespace ferry
