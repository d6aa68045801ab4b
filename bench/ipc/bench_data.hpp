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

}  // namespace ferry::bench
