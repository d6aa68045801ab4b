// Sizing a small batch (1,000 rows of x int64, f float64, s a short string; what `ferry get` and
// the Flight client count for each batch): ferry's ArrayBytes, its ArrayView (SetArray and the
// buffers' sizes summed, what sized batches before), and Arrow C++'s ReferencedBufferSize of the
// same batch, imported once, in the same run.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ferry/format/array_bytes.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"

#ifdef FERRY_BENCH_WITH_ARROW
#include <arrow/c/bridge.h>
#include <arrow/record_batch.h>
#include <arrow/util/byte_size.h>
#endif

namespace ferry {
namespace {

void Need(const Status& st) {
  if (!st.ok()) {
    std::fprintf(stderr, "benchmark setup failed: %s\n", st.message().c_str());
    std::abort();
  }
}

struct Batch {
  UniqueSchema schema;
  UniqueArray array;
};

Batch MakeSmallBatch() {
  Batch out;
  auto schema =
      Field::Make("+s", "", {Field::Make("l", "x"), Field::Make("g", "f"), Field::Make("u", "s")})
          .Export();
  Need(schema.status());
  out.schema = std::move(schema).ValueOrDie();
  auto builder = ArrayBuilder::Make(out.schema.get());
  Need(builder.status());
  for (int64_t i = 0; i < 1000; ++i) {
    Need((*builder)->child(0)->AppendInt(i));
    Need((*builder)->child(1)->AppendDouble(static_cast<double>(i) * 0.5));
    Need((*builder)->child(2)->AppendBytes("v" + std::to_string(i % 1000)));
    Need((*builder)->FinishElement());
  }
  auto array = (*builder)->Finish();
  Need(array.status());
  out.array = std::move(array).ValueOrDie();
  return out;
}

const Batch& SmallBatch() {
  static const Batch b = MakeSmallBatch();
  return b;
}

void BM_ArrayBytes_SmallBatch_Ferry(benchmark::State& state) {
  const Batch& b = SmallBatch();
  auto sizes = ArrayBytes::Make(b.schema.get());
  Need(sizes.status());
  for (auto _ : state) {
    Result<int64_t> bytes = sizes->Of(b.array.get());
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ArrayBytes_SmallBatch_Ferry);

// The same figure through a view set to each batch.
void BM_ArrayBytes_SmallBatch_FerryArrayView(benchmark::State& state) {
  const Batch& b = SmallBatch();
  auto view = ArrayView::Make(b.schema.get());
  Need(view.status());
  for (auto _ : state) {
    Need(view->SetArray(b.array.get()));
    benchmark::DoNotOptimize(ViewBytes(*view));
    view->Reset();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ArrayBytes_SmallBatch_FerryArrayView);

#ifdef FERRY_BENCH_WITH_ARROW
// Arrow C++'s size of the buffer ranges a batch references, the batch imported beforehand.
void BM_ArrayBytes_SmallBatch_ArrowCpp(benchmark::State& state) {
  Batch b = MakeSmallBatch();  // moved into Arrow C++ by the import
  auto batch = arrow::ImportRecordBatch(b.array.get(), b.schema.get());
  if (!batch.ok()) {
    state.SkipWithError(batch.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    auto bytes = arrow::util::ReferencedBufferSize(**batch);
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ArrayBytes_SmallBatch_ArrowCpp);
#endif

}  // namespace
}  // namespace ferry
