// Reading the IPC stream format: ferry against Arrow C++ (from pyarrow) on the same bytes, in the
// same run. A ~1 GiB mixed table from memory and memory-mapped; a copying read of the same bytes
// as the baseline zero-copy must beat; the metadata-bound case of 1,000 rows x 200 columns; and a
// string dictionary that grows by deltas.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>

#include "bench_data.hpp"
#include "ferry/ipc/reader.hpp"

#ifdef FERRY_BENCH_WITH_ARROW
#include <arrow/buffer.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/record_batch.h>
#endif

namespace ferry {
namespace {

using bench::Check;
using bench::Value;

// Consume a stream as a C consumer would: get_next, look, release.
int64_t Drain(ArrowArrayStream* stream) {
  int64_t rows = 0;
  while (true) {
    UniqueArray b;
    if (stream->get_next(stream, b.get()) != 0) std::abort();
    if (!b.valid()) break;
    rows += b->length;
  }
  return rows;
}

void ReadFerry(benchmark::State& state, ValidationLevel level) {
  const auto& d = bench::MixedTable();
  ipc::ReadOptions options;
  options.validation = level;
  for (auto _ : state) {
    auto stream = Value(ipc::ReadStream(d.stream, options));
    benchmark::DoNotOptimize(Drain(stream.get()));
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
  state.counters["batches"] = static_cast<double>(d.batches);
}
void BM_ReadMemory_Ferry(benchmark::State& s) { ReadFerry(s, ValidationLevel::kNone); }
void BM_ReadMemory_Ferry_FullValidation(benchmark::State& s) {
  ReadFerry(s, ValidationLevel::kFull);
}
BENCHMARK(BM_ReadMemory_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadMemory_Ferry_FullValidation)->Unit(benchmark::kMillisecond);

void BM_ReadMmap_Ferry(benchmark::State& state) {
  const auto& d = bench::MixedTable();
  ipc::ReadOptions options;
  options.validation = ValidationLevel::kNone;
  for (auto _ : state) {
    auto bytes = Value(SharedBytes::MapFile(d.path));
    auto stream = Value(ipc::ReadStream(bytes, options));
    benchmark::DoNotOptimize(Drain(stream.get()));
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
}
BENCHMARK(BM_ReadMmap_Ferry)->Unit(benchmark::kMillisecond);

// The baseline a zero-copy read must beat by 50x: copying the same bytes once.
void BM_CopyingRead_Memcpy(benchmark::State& state) {
  const auto& d = bench::MixedTable();
  std::unique_ptr<uint8_t[]> copy(new uint8_t[static_cast<size_t>(d.stream.size)]);
  std::memset(copy.get(), 0, static_cast<size_t>(d.stream.size));  // fault the pages in first
  for (auto _ : state) {
    std::memcpy(copy.get(), d.stream.data, static_cast<size_t>(d.stream.size));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
}
BENCHMARK(BM_CopyingRead_Memcpy)->Unit(benchmark::kMillisecond);

// 1,000 rows x 200 int32/utf8 columns, 100 batches: the cost is all metadata. The per-column
// figure divides by batches x columns, so the one-time schema decode is amortised.
constexpr int64_t kWideBatches = 100;
const SharedBytes& WideBatch() {
  static SharedBytes* bytes = [] {
    std::vector<Field> columns;
    for (int c = 0; c < 200; ++c) {
      columns.push_back(Field::Make(c % 2 ? "u" : "i", "c" + std::to_string(c)));
    }
    Field root = Field::Make("+s", "", std::move(columns));
    root.flags = 0;
    auto schema = Value(root.Export());
    auto b = Value(ArrayBuilder::Make(schema.get()));
    for (int64_t i = 0; i < 1000; ++i) {
      for (int c = 0; c < 200; ++c) {
        Check(c % 2 ? b->child(c)->AppendBytes("s" + std::to_string(i))
                    : b->child(c)->AppendInt(i));
      }
      Check(b->FinishElement());
    }
    auto batch = Value(b->Finish());
    ipc::MemorySink sink;
    auto w = Value(ipc::StreamWriter::Open(&sink, schema.get()));
    for (int64_t k = 0; k < kWideBatches; ++k) Check(w.WriteBatch(batch.get()));
    Check(w.Close());
    return new SharedBytes(sink.Finish());
  }();
  return *bytes;
}

void BM_DecodeWideBatch_Ferry(benchmark::State& state) {
  const auto& bytes = WideBatch();
  ipc::ReadOptions options;
  options.validation = ValidationLevel::kNone;
  for (auto _ : state) {
    auto stream = Value(ipc::ReadStream(bytes, options));
    benchmark::DoNotOptimize(Drain(stream.get()));
  }
  state.counters["per_column"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 200 * kWideBatches,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DecodeWideBatch_Ferry)->Unit(benchmark::kMicrosecond);

// The growing dictionary (bench_data.hpp) as a stream of deltas, of strings or (nested) of
// structs. A reader keeps one contiguous dictionary, so each delta costs it a join of the whole
// dictionary so far.
using bench::kDeltas;
SharedBytes* WriteGrowingDictionary(bool nested) {
  ipc::MemorySink sink;
  ipc::WriteOptions options;
  options.emit_dictionary_deltas = true;
  auto w = Value(
      ipc::StreamWriter::Open(&sink, bench::GrowingDictionarySource(nested).schema.get(), options));
  for (int64_t k = 0; k <= kDeltas; ++k) {
    const bench::GrowingBatch batch(k, nested);
    Check(w.WriteBatch(&batch.batch));
  }
  Check(w.Close());
  if (w.stats().dictionary_deltas != kDeltas) std::abort();
  return new SharedBytes(sink.Finish());
}
const SharedBytes& GrowingDictionary(bool nested = false) {
  static SharedBytes* strings = WriteGrowingDictionary(false);
  static SharedBytes* structs = WriteGrowingDictionary(true);
  return nested ? *structs : *strings;
}

// With full validation each dictionary's values are checked once, as its message arrives, and
// each batch's indices against it; Arrow C++'s ValidateFull of a batch walks its dictionary too.
void ReadDeltasFerry(benchmark::State& state, ValidationLevel level, bool nested = false) {
  const auto& bytes = GrowingDictionary(nested);
  ipc::ReadOptions options;
  options.validation = level;
  for (auto _ : state) {
    auto stream = Value(ipc::ReadStream(bytes, options));
    benchmark::DoNotOptimize(Drain(stream.get()));
  }
  state.counters["per_delta"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kDeltas,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_ReadDictionaryDeltas_Ferry(benchmark::State& s) {
  ReadDeltasFerry(s, ValidationLevel::kDefault);
}
void BM_ReadDictionaryDeltas_Ferry_FullValidation(benchmark::State& s) {
  ReadDeltasFerry(s, ValidationLevel::kFull);
}
void BM_ReadDictionaryDeltas_Nested_Ferry(benchmark::State& s) {
  ReadDeltasFerry(s, ValidationLevel::kDefault, true);
}
BENCHMARK(BM_ReadDictionaryDeltas_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadDictionaryDeltas_Ferry_FullValidation)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadDictionaryDeltas_Nested_Ferry)->Unit(benchmark::kMillisecond);

#ifdef FERRY_BENCH_WITH_ARROW
int64_t DrainArrow(const std::shared_ptr<arrow::io::InputStream>& input, bool validate) {
  auto reader = arrow::ipc::RecordBatchStreamReader::Open(input).ValueOrDie();
  int64_t rows = 0;
  while (true) {
    std::shared_ptr<arrow::RecordBatch> b;
    if (!reader->ReadNext(&b).ok()) std::abort();
    if (!b) break;
    if (validate && !b->ValidateFull().ok()) std::abort();
    rows += b->num_rows();
  }
  return rows;
}

void ReadArrow(benchmark::State& state, bool validate) {
  const auto& d = bench::MixedTable();
  auto buffer = std::make_shared<arrow::Buffer>(d.stream.data, d.stream.size);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        DrainArrow(std::make_shared<arrow::io::BufferReader>(buffer), validate));
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
}
void BM_ReadMemory_ArrowCpp(benchmark::State& s) { ReadArrow(s, false); }
void BM_ReadMemory_ArrowCpp_FullValidation(benchmark::State& s) { ReadArrow(s, true); }
BENCHMARK(BM_ReadMemory_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadMemory_ArrowCpp_FullValidation)->Unit(benchmark::kMillisecond);

void BM_ReadMmap_ArrowCpp(benchmark::State& state) {
  const auto& d = bench::MixedTable();
  for (auto _ : state) {
    auto file = arrow::io::MemoryMappedFile::Open(d.path, arrow::io::FileMode::READ).ValueOrDie();
    benchmark::DoNotOptimize(DrainArrow(file, false));
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
}
BENCHMARK(BM_ReadMmap_ArrowCpp)->Unit(benchmark::kMillisecond);

void BM_DecodeWideBatch_ArrowCpp(benchmark::State& state) {
  const auto& bytes = WideBatch();
  auto buffer = std::make_shared<arrow::Buffer>(bytes.data, bytes.size);
  for (auto _ : state) {
    benchmark::DoNotOptimize(DrainArrow(std::make_shared<arrow::io::BufferReader>(buffer), false));
  }
  state.counters["per_column"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 200 * kWideBatches,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DecodeWideBatch_ArrowCpp)->Unit(benchmark::kMicrosecond);

void ReadDeltasArrow(benchmark::State& state, bool validate, bool nested = false) {
  const auto& bytes = GrowingDictionary(nested);
  auto buffer = std::make_shared<arrow::Buffer>(bytes.data, bytes.size);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        DrainArrow(std::make_shared<arrow::io::BufferReader>(buffer), validate));
  }
  state.counters["per_delta"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kDeltas,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_ReadDictionaryDeltas_ArrowCpp(benchmark::State& s) { ReadDeltasArrow(s, false); }
void BM_ReadDictionaryDeltas_ArrowCpp_FullValidation(benchmark::State& s) {
  ReadDeltasArrow(s, true);
}
void BM_ReadDictionaryDeltas_Nested_ArrowCpp(benchmark::State& s) {
  ReadDeltasArrow(s, false, true);
}
BENCHMARK(BM_ReadDictionaryDeltas_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadDictionaryDeltas_ArrowCpp_FullValidation)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadDictionaryDeltas_Nested_ArrowCpp)->Unit(benchmark::kMillisecond);
#endif

}  // namespace
}  // namespace ferry
