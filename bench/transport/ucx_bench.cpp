// The UCX transport on 127.0.0.1: tag-send bandwidth of 64 MiB messages from one thread to a
// receiving thread over one connection, and Fetch bandwidth of a 64 MiB region (RMA gets into a
// fresh allocation, page faults included). Compare with `ucx_perftest -t tag_bw`.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ferry/transport/ucx.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kMessage = 64 << 20;
constexpr uint64_t kNumberMask = 0xFFFFFFFF;
constexpr uint64_t kStop = 0xFFFFFFFF;

[[noreturn]] void Fail(const Status& st) {
  std::fprintf(stderr, "ucx_transport_bench: %s\n", st.message().c_str());
  std::abort();
}

template <typename T>
T Value(Result<T> r) {
  if (!r.ok()) Fail(r.status());
  return std::move(r).value();
}

void Check(const Status& st) {
  if (!st.ok()) Fail(st);
}

// One listener, one region the client may read, and one connected pair for the whole run.
struct Pair {
  std::unique_ptr<Listener> listener;
  std::shared_ptr<Region> region;
  std::unique_ptr<Connection> client, server;
};

Pair& Connected() {
  static Pair pair = [] {
    Pair p;
    p.listener = Value(ListenUcx("127.0.0.1:0"));
    p.region = Value(p.listener->CreateRegion(kMessage));
    ConnectOptions options;
    options.limits.timeout = 5s;
    options.remote_handle = p.region->remote_handle();
    options.extensions = true;  // on one host: the shared-memory fast path
    p.client = Value(ConnectUcx(p.listener->address(), options));
    p.server = Value(p.listener->Accept(5s));
    return p;
  }();
  return pair;
}

void BM_UcxTagSend64MiB(benchmark::State& state) {
  if (!UcxAvailable()) {
    state.SkipWithError("this build of ferry has no UCX transport");
    return;
  }
  Pair& p = Connected();
  std::vector<uint8_t> data(kMessage, 0x5A);
  const ByteSpan piece{data.data(), kMessage};
  std::thread receiver([&] {
    for (;;) {
      TaggedMessage m = Value(p.server->ReceiveTagged(0, 0, 60s));
      if ((m.tag & kNumberMask) == kStop) break;
      benchmark::DoNotOptimize(m.payload.data);
    }
  });
  uint32_t seq = 0;
  for (auto _ : state) {
    Check(p.client->SendTagged(seq++, {&piece, 1}));
  }
  Check(p.client->SendTagged(kStop, {}));
  receiver.join();
  state.SetBytesProcessed(state.iterations() * kMessage);
}
BENCHMARK(BM_UcxTagSend64MiB)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(2);

void BM_UcxFetch64MiB(benchmark::State& state) {
  if (!UcxAvailable()) {
    state.SkipWithError("this build of ferry has no UCX transport");
    return;
  }
  Pair& p = Connected();
  const std::shared_ptr<Region>& region = p.region;
  std::memset(region->data(), 0x3C, kMessage);
  const BufferRef refs[] = {{region->WireAddress(0), static_cast<uint64_t>(kMessage)}};
  for (auto _ : state) {
    FetchedBody body;
    Check(p.client->Fetch(refs, 60s, &body));
    benchmark::DoNotOptimize(body.bytes.data);
  }
  state.SetBytesProcessed(state.iterations() * kMessage);
}
BENCHMARK(BM_UcxFetch64MiB)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(2);

}  // namespace
}  // namespace ferry::transport
