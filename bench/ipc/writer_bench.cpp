// Writing the IPC stream format: ferry against Arrow C++ (from pyarrow), same batches, same run.
// A ~1 GiB mixed table to a memory sink and to a file (no fsync), uncompressed and LZ4. The
// "copied" counter is ferry's own count of body bytes it had to copy: 0 means scatter-gather.
// And batches that share one large dictionary, and a dictionary that grows by deltas.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "bench_data.hpp"
#include "ferry/device/device.hpp"
#include "ferry/device/device_array.hpp"

#ifdef FERRY_BENCH_WITH_ARROW
#include <arrow/array/array_dict.h>
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

// A CPU device batch over `array`'s buffers, which its caller keeps: the writer may hold it.
UniqueDeviceArray Borrowed(const ArrowArray& array) {
  ArrowArray view = array;
  view.release = [](ArrowArray* a) { a->release = nullptr; };
  UniqueDeviceArray out;
  Check(DeviceArrayInit(*CpuDevice(), out.get(), &view, nullptr));
  return out;
}

// 200 batches of 1,000 indices into one shared 200,000-string dictionary (2.1 MB of values),
// as a table read from a dictionary-encoded file is: the dictionary is sent once.
constexpr int64_t kSharedBatches = 200;
// Small batches, as streams carry them: 20,000 batches of 1,000 rows (x int64, f float64, s a
// short string; about 24 KB each, as in bench/dipc/small_batches) written to a sink that counts
// the bytes and keeps none (Arrow C++'s MockOutputStream on its side), so that what is timed is
// the writer's work per batch, not memory growing to take 480 MB.
class CountingSink final : public ipc::Sink {
 public:
  Status Write(std::span<const ByteSpan> pieces) override {
    for (const ByteSpan& p : pieces) size_ += p.size;
    return Status::OK();
  }
  int64_t position() const noexcept override { return size_; }

 private:
  int64_t size_ = 0;
};
constexpr int64_t kSmallBatches = 20000;
struct SmallBatch {
  UniqueSchema schema;
  UniqueArray batch;
};
const SmallBatch& SmallBatchData() {
  static SmallBatch* data = [] {
    auto* d = new SmallBatch();
    Field root = Field::Make("+s", "",
                             {Field::Make("l", "x"), Field::Make("g", "f"), Field::Make("u", "s")});
    root.flags = 0;
    d->schema = Value(root.Export());
    auto b = Value(ArrayBuilder::Make(d->schema.get()));
    for (int64_t i = 0; i < 1000; ++i) {
      Check(b->child(0)->AppendInt(i));
      Check(b->child(1)->AppendDouble(static_cast<double>(i) * 0.5));
      Check(b->child(2)->AppendBytes("v" + std::to_string(i)));
      Check(b->FinishElement());
    }
    d->batch = Value(b->Finish());
    return d;
  }();
  return *data;
}

void BM_WriteSmallBatches_Ferry(benchmark::State& state) {
  const SmallBatch& d = SmallBatchData();
  for (auto _ : state) {
    CountingSink sink;
    auto w = Value(ipc::StreamWriter::Open(&sink, d.schema.get()));
    for (int64_t i = 0; i < kSmallBatches; ++i) Check(w.WriteBatch(d.batch.get()));
    Check(w.Close());
  }
  state.counters["batches_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kSmallBatches), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WriteSmallBatches_Ferry)->Unit(benchmark::kMillisecond);

struct SharedDictionary {
  UniqueSchema schema;
  UniqueArray batch;
};
const SharedDictionary& SharedDictionaryBatch() {
  static SharedDictionary* data = [] {
    auto* d = new SharedDictionary();
    Field root = Field::Make("+s", "", {Field::Dictionary("d", "i", Field::Make("u", ""))});
    root.flags = 0;
    d->schema = Value(root.Export());
    auto b = Value(ArrayBuilder::Make(d->schema.get()));
    ArrayBuilder* column = b->child(0);
    constexpr int64_t kValues = 200000;
    for (int64_t i = 0; i < kValues; ++i) {
      Check(column->dictionary()->AppendBytes("value " + std::to_string(i)));
    }
    for (int64_t i = 0; i < 1000; ++i) {
      Check(column->AppendIndex(i * 7 % kValues));
      Check(b->FinishElement());
    }
    d->batch = Value(b->Finish());
    return d;
  }();
  return *data;
}

// `held`: each batch handed over with WriteHeldBatch (a borrowed view: the writer may keep it
// until the next), or only lent with WriteBatch.
void WriteShared(benchmark::State& state, bool held) {
  const SharedDictionary& d = SharedDictionaryBatch();
  int64_t bytes = 0;
  for (auto _ : state) {
    ipc::MemorySink sink;
    auto w = Value(ipc::StreamWriter::Open(&sink, d.schema.get()));
    for (int64_t i = 0; i < kSharedBatches; ++i) {
      if (held) {
        Check(w.WriteHeldBatch(Borrowed(*d.batch.get())));
      } else {
        Check(w.WriteBatch(d.batch.get()));
      }
    }
    Check(w.Close());
    bytes = sink.position();
    if (w.stats().dictionary_batches != 1) std::abort();
  }
  state.counters["per_batch"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kSharedBatches,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["output_bytes"] = static_cast<double>(bytes);
}
void BM_WriteSharedDictionary_Ferry(benchmark::State& s) { WriteShared(s, true); }
void BM_WriteSharedDictionary_Ferry_Lent(benchmark::State& s) { WriteShared(s, false); }
BENCHMARK(BM_WriteSharedDictionary_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteSharedDictionary_Ferry_Lent)->Unit(benchmark::kMillisecond);

// The growing dictionary (bench_data.hpp) written with deltas: each batch's dictionary starts
// with the one sent before it, so only its 500 new values go. Held, the writer compares the new
// dictionary's first values with the one it still holds; lent, with their hash.
void WriteGrowing(benchmark::State& state, bool held, bool nested = false) {
  const auto& d = bench::GrowingDictionarySource(nested);
  ipc::WriteOptions options;
  options.emit_dictionary_deltas = true;
  // Every batch outlives the writer: a held one is read until the next is written.
  std::vector<std::unique_ptr<bench::GrowingBatch>> batches;
  for (int64_t k = 0; k <= bench::kDeltas; ++k) {
    batches.push_back(std::make_unique<bench::GrowingBatch>(k, nested));
  }
  for (auto _ : state) {
    ipc::MemorySink sink;
    auto w = Value(ipc::StreamWriter::Open(&sink, d.schema.get(), options));
    for (const auto& batch : batches) {
      if (held) {
        Check(w.WriteHeldBatch(Borrowed(batch->batch)));
      } else {
        Check(w.WriteBatch(&batch->batch));
      }
    }
    Check(w.Close());
    if (w.stats().dictionary_deltas != bench::kDeltas) std::abort();
  }
  state.counters["per_delta"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * bench::kDeltas,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_WriteDictionaryDeltas_Ferry(benchmark::State& s) { WriteGrowing(s, true); }
void BM_WriteDictionaryDeltas_Ferry_Lent(benchmark::State& s) { WriteGrowing(s, false); }
void BM_WriteDictionaryDeltas_Nested_Ferry(benchmark::State& s) { WriteGrowing(s, true, true); }
void BM_WriteDictionaryDeltas_Nested_Ferry_Lent(benchmark::State& s) {
  WriteGrowing(s, false, true);
}
BENCHMARK(BM_WriteDictionaryDeltas_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteDictionaryDeltas_Ferry_Lent)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteDictionaryDeltas_Nested_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteDictionaryDeltas_Nested_Ferry_Lent)->Unit(benchmark::kMillisecond);

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

void BM_WriteSmallBatches_ArrowCpp(benchmark::State& state) {
  const SmallBatch& d = SmallBatchData();
  UniqueSchema schema = Value(CopySchema(d.schema.get()));
  ArrowArray view = *d.batch.get();
  view.release = [](ArrowArray* a) { a->release = nullptr; };  // ferry keeps ownership
  auto batch = arrow::ImportRecordBatch(&view, schema.get()).ValueOrDie();
  for (auto _ : state) {
    auto out = std::make_shared<arrow::io::MockOutputStream>();
    auto w = arrow::ipc::MakeStreamWriter(out, batch->schema()).ValueOrDie();
    for (int64_t i = 0; i < kSmallBatches; ++i) {
      if (!w->WriteRecordBatch(*batch).ok()) std::abort();
    }
    if (!w->Close().ok()) std::abort();
  }
  state.counters["batches_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kSmallBatches), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WriteSmallBatches_ArrowCpp)->Unit(benchmark::kMillisecond);

void BM_WriteSharedDictionary_ArrowCpp(benchmark::State& state) {
  const SharedDictionary& d = SharedDictionaryBatch();
  UniqueSchema schema = Value(CopySchema(d.schema.get()));
  ArrowArray view = *d.batch.get();
  view.release = [](ArrowArray* a) { a->release = nullptr; };  // d keeps it
  auto batch = arrow::ImportRecordBatch(&view, schema.get()).ValueOrDie();
  int64_t bytes = 0;
  for (auto _ : state) {
    auto out = arrow::io::BufferOutputStream::Create().ValueOrDie();
    auto w = arrow::ipc::MakeStreamWriter(out, batch->schema()).ValueOrDie();
    for (int64_t i = 0; i < kSharedBatches; ++i) {
      if (!w->WriteRecordBatch(*batch).ok()) std::abort();
    }
    if (!w->Close().ok()) std::abort();
    bytes = out->Tell().ValueOrDie();
  }
  state.counters["per_batch"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kSharedBatches,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["output_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_WriteSharedDictionary_ArrowCpp)->Unit(benchmark::kMillisecond);

void WriteDeltasArrow(benchmark::State& state, bool nested) {
  const auto& d = bench::GrowingDictionarySource(nested);
  UniqueSchema schema = Value(CopySchema(d.schema.get()));
  ArrowArray view = *d.full.get();
  view.release = [](ArrowArray* a) { a->release = nullptr; };  // d keeps it
  auto full = arrow::ImportRecordBatch(&view, schema.get()).ValueOrDie();
  const auto& column = static_cast<const arrow::DictionaryArray&>(*full->column(0));
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (int64_t k = 0; k <= bench::kDeltas; ++k) {
    auto cut = arrow::DictionaryArray::FromArrays(
                   column.type(), column.indices(),
                   column.dictionary()->Slice(0, bench::kDeltaBase + bench::kDeltaStep * k))
                   .ValueOrDie();
    batches.push_back(arrow::RecordBatch::Make(full->schema(), full->num_rows(), {cut}));
  }
  auto options = arrow::ipc::IpcWriteOptions::Defaults();
  options.emit_dictionary_deltas = true;
  for (auto _ : state) {
    auto out = arrow::io::BufferOutputStream::Create().ValueOrDie();
    auto w = arrow::ipc::MakeStreamWriter(out, full->schema(), options).ValueOrDie();
    for (const auto& b : batches) {
      if (!w->WriteRecordBatch(*b).ok()) std::abort();
    }
    if (!w->Close().ok()) std::abort();
    if (w->stats().num_dictionary_deltas != bench::kDeltas) std::abort();
  }
  state.counters["per_delta"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * bench::kDeltas,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_WriteDictionaryDeltas_ArrowCpp(benchmark::State& s) { WriteDeltasArrow(s, false); }
void BM_WriteDictionaryDeltas_Nested_ArrowCpp(benchmark::State& s) { WriteDeltasArrow(s, true); }
BENCHMARK(BM_WriteDictionaryDeltas_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteDictionaryDeltas_Nested_ArrowCpp)->Unit(benchmark::kMillisecond);
#endif

}  // namespace
}  // namespace ferry
