// Writing the IPC stream format: ferry against Arrow C++ (from pyarrow), same batches, same run.
// A ~1 GiB mixed table to a memory sink and to a file (no fsync), uncompressed and LZ4. The
// "copied" counter is ferry's own count of body bytes it had to copy: 0 means scatter-gather.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "bench_data.hpp"

#ifdef FERRY_BENCH_WITH_ARROW
#include <arrow/c/bridge.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/writer.h>
#include <arrow/record_batch.h>
#include <arrow/util/compression.h>
#endif

namespace ferry {
namespace {

using bench::Check;
using bench::Value;

const char* kOut = "/tmp/ferry_bench_ipc_out.arrows";

template <typename MakeSink>
void WriteFerry(benchmark::State& state, ipc::Compression compression, MakeSink make_sink) {
  const auto& d = bench::MixedTable();
  ipc::WriteOptions options;
  options.compression = compression;
  ipc::WriteStats stats;
  for (auto _ : state) {
    auto sink = make_sink();
    auto w = Value(ipc::StreamWriter::Open(sink.get(), d.schema.get(), options));
    for (int64_t i = 0; i < d.batches; ++i) Check(w.WriteBatch(d.batch.get()));
    Check(w.Close());
    stats = w.stats();
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
  state.counters["output_bytes"] = static_cast<double>(stats.bytes_written);
  state.counters["copied"] = static_cast<double>(stats.bytes_copied);
}

auto MemorySinkMaker() {
  return [] { return std::make_unique<ipc::MemorySink>(); };
}
auto FileSinkMaker() {
  return [] { return Value(ipc::FileSink::Open(kOut)); };
}

void BM_WriteMemory_Ferry(benchmark::State& s) {
  WriteFerry(s, ipc::Compression::kNone, MemorySinkMaker());
}
void BM_WriteFile_Ferry(benchmark::State& s) {
  WriteFerry(s, ipc::Compression::kNone, FileSinkMaker());
}
void BM_WriteFile_Ferry_Lz4(benchmark::State& s) {
  WriteFerry(s, ipc::Compression::kLz4Frame, FileSinkMaker());
}
BENCHMARK(BM_WriteMemory_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteFile_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteFile_Ferry_Lz4)->Unit(benchmark::kMillisecond);

#ifdef FERRY_BENCH_WITH_ARROW
std::shared_ptr<arrow::RecordBatch> ArrowBatch() {
  const auto& d = bench::MixedTable();
  // Share ferry's buffers with Arrow through the C data interface (no copy).
  UniqueSchema schema = Value(CopySchema(d.schema.get()));
  ArrowArray view{};
  view = *d.batch.get();
  view.release = [](ArrowArray* a) { a->release = nullptr; };  // ferry keeps ownership
  return arrow::ImportRecordBatch(&view, schema.get()).ValueOrDie();
}

template <typename MakeStream>
void WriteArrow(benchmark::State& state, arrow::Compression::type codec, MakeStream make_stream) {
  const auto& d = bench::MixedTable();
  auto batch = ArrowBatch();
  auto options = arrow::ipc::IpcWriteOptions::Defaults();
  if (codec != arrow::Compression::UNCOMPRESSED) {
    options.codec = arrow::util::Codec::Create(codec).ValueOrDie();
  }
  int64_t bytes = 0;
  for (auto _ : state) {
    std::shared_ptr<arrow::io::OutputStream> out = make_stream();
    auto w = arrow::ipc::MakeStreamWriter(out, batch->schema(), options).ValueOrDie();
    for (int64_t i = 0; i < d.batches; ++i) {
      if (!w->WriteRecordBatch(*batch).ok()) std::abort();
    }
    if (!w->Close().ok()) std::abort();
    bytes = out->Tell().ValueOrDie();
    if (!out->Close().ok()) std::abort();
  }
  state.SetBytesProcessed(state.iterations() * d.stream.size);
  state.counters["output_bytes"] = static_cast<double>(bytes);
}

void BM_WriteMemory_ArrowCpp(benchmark::State& s) {
  WriteArrow(s, arrow::Compression::UNCOMPRESSED,
             [] { return arrow::io::BufferOutputStream::Create().ValueOrDie(); });
}
void BM_WriteFile_ArrowCpp(benchmark::State& s) {
  WriteArrow(s, arrow::Compression::UNCOMPRESSED,
             [] { return arrow::io::FileOutputStream::Open(kOut).ValueOrDie(); });
}
void BM_WriteFile_ArrowCpp_Lz4(benchmark::State& s) {
  WriteArrow(s, arrow::Compression::LZ4_FRAME,
             [] { return arrow::io::FileOutputStream::Open(kOut).ValueOrDie(); });
}
BENCHMARK(BM_WriteMemory_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteFile_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteFile_ArrowCpp_Lz4)->Unit(benchmark::kMillisecond);
#endif

}  // namespace
}  // namespace ferry
