// Data shared by the IPC benchmarks: a mixed table of about 1 GiB (int64, double, short strings,
// list<int32>), made of one 64K-row batch written repeatedly, and the same as a stream in memory
// and on disk. FERRY_BENCH_IPC_MIB overrides the size.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_scale.hpp"
#include "ferry/core/bytes.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::bench {

inline void Check(const Status& st) {
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

struct IpcData {
  UniqueSchema schema;
  UniqueArray batch;    // one 64K-row batch
  int64_t batches = 0;  // how many times it is written
  SharedBytes stream;   // the whole stream in memory
  std::string path;     // the same stream on disk
};

inline const IpcData& MixedTable() {
  static IpcData* data = [] {
    auto* d = new IpcData();
    Field root = Field::Make("+s", "",
                             {Field::Make("l", "i"), Field::Make("g", "d"), Field::Make("u", "s"),
                              Field::Make("+l", "list", {Field::Make("i", "item")})});
    root.flags = 0;
    d->schema = Value(root.Export());
    auto b = Value(ArrayBuilder::Make(d->schema.get()));
    for (int64_t i = 0; i < 65536; ++i) {
      Check(b->child(0)->AppendInt(i));
      Check(b->child(1)->AppendDouble(static_cast<double>(i) * 0.5));
      Check(b->child(2)->AppendBytes("value " + std::to_string(i % 1000)));
      for (int64_t k = 0; k < i % 4; ++k) Check(b->child(3)->child(0)->AppendInt(k));
      Check(b->child(3)->FinishElement());
      Check(b->FinishElement());
    }
    d->batch = Value(b->Finish());
    const char* mib = std::getenv("FERRY_BENCH_IPC_MIB");
    const int64_t target = mib ? std::atoll(mib) << 20 : testing::ScaledBytes(int64_t{1} << 30);
    ipc::MemorySink sink;
    auto w = Value(ipc::StreamWriter::Open(&sink, d->schema.get()));
    while (sink.position() < target) {
      Check(w.WriteBatch(d->batch.get()));
      ++d->batches;
    }
    Check(w.Close());
    d->stream = sink.Finish();
    d->path = "/tmp/ferry_bench_ipc.arrows";
    auto file = Value(ipc::FileSink::Open(d->path));
    ByteSpan all{d->stream.data, d->stream.size};
    Check(file->Write({&all, 1}));
    Check(file->Close());
    return d;
  }();
  return *data;
}

// A dictionary that grows by deltas: 10,000 values, then kDeltas batches each adding 500
// (110,000 at the end), each batch 1,000 indices into the first 10,000. Its values are strings
// ("value N", 1.3 MB at the end) or, nested, struct<k: int64, s: string> of N and the same string.
constexpr int64_t kDeltaBase = 10000;
constexpr int64_t kDeltaStep = 500;
constexpr int64_t kDeltas = 200;
struct GrowingDictionaryData {
  UniqueSchema schema;
  UniqueArray full;  // the indices, with the dictionary at its whole length
};

inline GrowingDictionaryData* MakeGrowingDictionary(bool nested) {
  auto* d = new GrowingDictionaryData();
  Field values = nested ? Field::Make("+s", "", {Field::Make("l", "k"), Field::Make("u", "s")})
                        : Field::Make("u", "");
  Field root = Field::Make("+s", "", {Field::Dictionary("d", "i", values)});
  root.flags = 0;
  d->schema = Value(root.Export());
  auto b = Value(ArrayBuilder::Make(d->schema.get()));
  ArrayBuilder* column = b->child(0);
  ArrayBuilder* words = column->dictionary();
  for (int64_t i = 0; i < kDeltaBase + kDeltaStep * kDeltas; ++i) {
    const std::string word = "value " + std::to_string(i);
    if (nested) {
      Check(words->child(0)->AppendInt(i));
      Check(words->child(1)->AppendBytes(word));
      Check(words->FinishElement());
    } else {
      Check(words->AppendBytes(word));
    }
  }
  for (int64_t i = 0; i < 1000; ++i) {
    Check(column->AppendIndex(i * 7 % kDeltaBase));
    Check(b->FinishElement());
  }
  d->full = Value(b->Finish());
  return d;
}

inline const GrowingDictionaryData& GrowingDictionarySource(bool nested = false) {
  static GrowingDictionaryData* strings = MakeGrowingDictionary(false);
  static GrowingDictionaryData* structs = MakeGrowingDictionary(true);
  return nested ? *structs : *strings;
}

// Batch k (0 to kDeltas) of the growing dictionary: the source's buffers, borrowed, its
// dictionary cut to its first kDeltaBase + kDeltaStep * k values. Made in place (it points into
// itself) and never released.
struct GrowingBatch {
  explicit GrowingBatch(int64_t k, bool nested = false) {
    const ArrowArray* full = GrowingDictionarySource(nested).full.get();
    values = *full->children[0]->dictionary;
    values.length = kDeltaBase + kDeltaStep * k;
    indices = *full->children[0];
    indices.dictionary = &values;
    children[0] = &indices;
    batch = *full;
    batch.children = children;
  }
  GrowingBatch(const GrowingBatch&) = delete;
  GrowingBatch& operator=(const GrowingBatch&) = delete;
  ArrowArray values{};
  ArrowArray indices{};
  ArrowArray* children[1] = {};
  ArrowArray batch{};
};

}  // namespace ferry::bench
