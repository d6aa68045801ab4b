// Reading and writing the IPC stream format: ferry against Arrow C++ (from pyarrow) on the same
// bytes, in the same run. 1M rows of int64, double, short strings and list<int32>.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/stream.hpp"
#include "ferry/ipc/reader.hpp"
#include "ferry/ipc/writer.hpp"

#ifdef FERRY_BENCH_WITH_ARROW
#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/record_batch.h>
#endif

namespace ferry {
namespace {

constexpr int64_t kRows = 1000000;
constexpr int64_t kBatchRows = 65536;

void Check(const Status& st) {
  if (!st.ok()) {
    std::fprintf(stderr, "benchmark setup failed: %s\n", st.message().c_str());
    std::abort();
  }
}

template <typename T>
T Value(Result<T> r) {
  Check(r.status());
  return std::move(*r);
}

struct Data {
  UniqueSchema schema;
  std::vector<UniqueArray> batches;
  ipc::SharedBytes stream;
};

const Data& GetData() {
  static Data* data = [] {
    auto* d = new Data();
    Field root = Field::Make("+s", "",
                             {Field::Make("l", "i"), Field::Make("g", "d"), Field::Make("u", "s"),
                              Field::Make("+l", "list", {Field::Make("i", "item")})});
    root.flags = 0;
    d->schema = Value(root.Export());
    for (int64_t start = 0; start < kRows; start += kBatchRows) {
      auto b = Value(ArrayBuilder::Make(d->schema.get()));
      const int64_t n = std::min(kBatchRows, kRows - start);
      for (int64_t i = start; i < start + n; ++i) {
        Check(b->child(0)->AppendInt(i));
        Check(b->child(1)->AppendDouble(static_cast<double>(i) * 0.5));
        Check(b->child(2)->AppendBytes("value " + std::to_string(i % 1000)));
        for (int64_t k = 0; k < i % 4; ++k) Check(b->child(3)->child(0)->AppendInt(k));
        Check(b->child(3)->FinishElement());
        Check(b->FinishElement());
      }
      d->batches.push_back(Value(b->Finish()));
    }
    ipc::MemorySink sink;
    auto w = Value(ipc::StreamWriter::Open(&sink, d->schema.get()));
    for (const auto& b : d->batches) Check(w.WriteBatch(b.get()));
    Check(w.Close());
    d->stream = sink.Finish();
    return d;
  }();
  return *data;
}

void ReadFerry(benchmark::State& state, ValidationLevel level) {
  const Data& d = GetData();
  ipc::ReadOptions options;
  options.validation = level;
  for (auto _ : state) {
    // Consumed as a C consumer would: get_next, read, release.
    auto stream = Value(ipc::ReadStream(d.stream, options));
    int64_t rows = 0;
    while (true) {
      UniqueArray b;
      if (stream->get_next(stream.get(), b.get()) != 0) std::abort();
      if (!b.valid()) break;
      rows += b->length;
    }
    benchmark::DoNotOptimize(rows);
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
}

void BM_ReadStream_Ferry_NoValidation(benchmark::State& s) { ReadFerry(s, ValidationLevel::kNone); }
void BM_ReadStream_Ferry_FullValidation(benchmark::State& s) {
  ReadFerry(s, ValidationLevel::kFull);
}
BENCHMARK(BM_ReadStream_Ferry_NoValidation)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadStream_Ferry_FullValidation)->Unit(benchmark::kMillisecond);

void WriteFerry(benchmark::State& state, ipc::Compression compression) {
  const Data& d = GetData();
  ipc::WriteOptions options;
  options.compression = compression;
  int64_t bytes = 0;
  for (auto _ : state) {
    ipc::MemorySink sink;
    auto w = Value(ipc::StreamWriter::Open(&sink, d.schema.get(), options));
    for (const auto& b : d.batches) Check(w.WriteBatch(b.get()));
    Check(w.Close());
    bytes = sink.position();
    benchmark::DoNotOptimize(sink.data());
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
  state.counters["output_bytes"] = static_cast<double>(bytes);
}

void BM_WriteStream_Ferry(benchmark::State& s) { WriteFerry(s, ipc::Compression::kNone); }
void BM_WriteStream_Ferry_Lz4(benchmark::State& s) { WriteFerry(s, ipc::Compression::kLz4Frame); }
BENCHMARK(BM_WriteStream_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteStream_Ferry_Lz4)->Unit(benchmark::kMillisecond);

#ifdef FERRY_BENCH_WITH_ARROW
std::shared_ptr<arrow::Buffer> ArrowInput() {
  const Data& d = GetData();
  return std::make_shared<arrow::Buffer>(d.stream.data, d.stream.size);
}

void ReadArrow(benchmark::State& state, bool validate) {
  const Data& d = GetData();
  auto buffer = ArrowInput();
  for (auto _ : state) {
    auto input = std::make_shared<arrow::io::BufferReader>(buffer);
    auto reader = arrow::ipc::RecordBatchStreamReader::Open(input).ValueOrDie();
    int64_t rows = 0;
    while (true) {
      std::shared_ptr<arrow::RecordBatch> b;
      if (!reader->ReadNext(&b).ok()) std::abort();
      if (!b) break;
      if (validate && !b->ValidateFull().ok()) std::abort();
      rows += b->num_rows();
    }
    benchmark::DoNotOptimize(rows);
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
}

void BM_ReadStream_ArrowCpp_NoValidation(benchmark::State& s) { ReadArrow(s, false); }
void BM_ReadStream_ArrowCpp_FullValidation(benchmark::State& s) { ReadArrow(s, true); }
BENCHMARK(BM_ReadStream_ArrowCpp_NoValidation)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadStream_ArrowCpp_FullValidation)->Unit(benchmark::kMillisecond);

void WriteArrow(benchmark::State& state, arrow::Compression::type codec) {
  const Data& d = GetData();
  auto input = std::make_shared<arrow::io::BufferReader>(ArrowInput());
  auto reader = arrow::ipc::RecordBatchStreamReader::Open(input).ValueOrDie();
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  while (true) {
    std::shared_ptr<arrow::RecordBatch> b;
    if (!reader->ReadNext(&b).ok()) std::abort();
    if (!b) break;
    batches.push_back(std::move(b));
  }
  auto options = arrow::ipc::IpcWriteOptions::Defaults();
  if (codec != arrow::Compression::UNCOMPRESSED) {
    options.codec = arrow::util::Codec::Create(codec).ValueOrDie();
  }
  int64_t bytes = 0;
  for (auto _ : state) {
    auto sink = arrow::io::BufferOutputStream::Create().ValueOrDie();
    auto w = arrow::ipc::MakeStreamWriter(sink, reader->schema(), options).ValueOrDie();
    for (const auto& b : batches) {
      if (!w->WriteRecordBatch(*b).ok()) std::abort();
    }
    if (!w->Close().ok()) std::abort();
    bytes = sink->Tell().ValueOrDie();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
  state.counters["output_bytes"] = static_cast<double>(bytes);
}

void BM_WriteStream_ArrowCpp(benchmark::State& s) {
  WriteArrow(s, arrow::Compression::UNCOMPRESSED);
}
void BM_WriteStream_ArrowCpp_Lz4(benchmark::State& s) {
  WriteArrow(s, arrow::Compression::LZ4_FRAME);
}
BENCHMARK(BM_WriteStream_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteStream_ArrowCpp_Lz4)->Unit(benchmark::kMillisecond);
#endif

}  // namespace
}  // namespace ferry
