// The cross-process transfer benchmark: a 1 GiB table of mixed columns (int64, double, short
// string, list<int32>) in 16 batches of 64 MiB, moved from a server process to this one:
//   (a) pyarrow IPC stream over a Unix socket, pyarrow on both ends (bench/dipc/pyarrow_socket.py)
//   (b) ferry's standard IPC stream over a Unix socket (StreamWriter -> socket -> Decoder)
//   (c) dipc over UCX, body type 0 (packed bodies as tagged messages; kept: each written once
//       into memory of its own and sent whole from it, as perftest sends from its buffer)
//   (d) dipc over UCX, body type 1 (buffer lists; the client reads with ucp_get)
//   (e) dipc over shared memory, body type 1 (the client reads in place)
// (c) and (d) run twice: on the protocol's own wire (the URI without ferry=1: UCX 1.13 puts
// client-server endpoints on TCP even on one host) and with ferry's same-host fast path
// (ferry=1: an endpoint from worker addresses, shared memory and CMA). ucx_perftest tag_bw and
// ucp_get at 64 MiB run in the same run, over TCP and with UCX's own choice, and so does the
// rate of 1,000-row batches through shared memory and through UCX. Every server is this binary
// run again (/proc/self/exe with FERRY_BENCH_ROLE=server), started once per configuration and
// serving every iteration; each iteration connects, drains every batch (releasing each as it
// comes) and disconnects. A dipc iteration's time runs from the connected stream to its end, as
// ucx_perftest's excludes its wire-up; the connection's set-up (UCX worker, endpoint, ticket) is
// the counter connect_ms, shown beside it in the summary.
//
// Environment: FERRY_BENCH_PYTHON (default <source>/.venv/bin/python) runs (a);
// FERRY_BENCH_PERFTEST_ITERS (default 50) sets ucx_perftest's -n.
#include "bench/dipc/transfer_bench.hpp"

#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ferry/transport/ucx.hpp"

namespace ferry::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds from `from` to now.
double Since(Clock::time_point from) {
  return std::chrono::duration<double>(Clock::now() - from).count();
}

// Drain a dipc stream; returns (batches, rows), the connection's set-up and the transfer (from
// the connected stream to its end, the release of the last batch included) in seconds. Each
// batch is released as it comes.
Status DrainDipc(const ServerProc& s, ValidationLevel validation, bool spec, int64_t* batches,
                 int64_t* rows, double* connect_s, double* transfer_s) {
  FERRY_ASSIGN_OR_RAISE(dipc::Uri uri, dipc::Uri::Parse(s.address));
  if (spec) uri.ferry = false;
  dipc::ClientOptions o;
  o.read.validation = validation;
  const Clock::time_point start = Clock::now();
  FERRY_ASSIGN_OR_RAISE(UniqueDeviceArrayStream stream, dipc::ConnectStream(uri, "table", o));
  const Clock::time_point connected = Clock::now();
  *connect_s = std::chrono::duration<double>(connected - start).count();
  ArrowDeviceArrayStream* st = stream.get();
  while (true) {
    UniqueDeviceArray batch;
    FERRY_RETURN_NOT_OK(StreamGetNext(st, batch.get()));
    if (!batch.valid()) break;
    ++*batches;
    *rows += batch->array.length;
  }
  *transfer_s = Since(connected);
  return Status::OK();
}

bool RecvExactly(int fd, uint8_t* p, int64_t n) {
  while (n > 0) {
    const ssize_t got = recv(fd, p, static_cast<size_t>(n), MSG_WAITALL);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= got;
  }
  return true;
}

// Read the standard stream from the IPC server: recv exactly what the decoder needs next into
// a buffer of its own (so a body is one buffer the decoder references in place).
Status DrainIpc(const ServerProc& s, ValidationLevel validation, int64_t* batches, int64_t* rows) {
  FERRY_ASSIGN_OR_RAISE(int fd, ConnectUnix(s.address));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  ipc::ReadOptions o;
  o.validation = validation;
  ipc::Decoder decoder(o);
  while (true) {
    const int64_t need = decoder.next_required_size();
    if (need == 0) break;
    const auto rounded = static_cast<size_t>((need + 63) / 64 * 64);
    std::shared_ptr<uint8_t> mem(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)),
                                 [](uint8_t* p) { std::free(p); });
    if (!mem) return Status::OutOfMemory("out of memory");
    if (!RecvExactly(fd, mem.get(), need)) {
      if (decoder.between_messages()) break;
      return Status::DataLoss("the IPC stream ended early");
    }
    uint8_t* data = mem.get();
    FERRY_RETURN_NOT_OK(decoder.Consume(SharedBytes{data, need, std::move(mem)}));
    while (std::optional<ipc::DecodedMessage> m = decoder.Next()) {
      if (m->kind == ipc::MessageKind::kRecordBatch) {
        ++*batches;
        *rows += m->batch->length;
      }
    }
  }
  return Status::OK();
}

void ReportTable(benchmark::State& state, const ServerProc& s) {
  state.SetBytesProcessed(state.iterations() * s.bytes);
  state.SetItemsProcessed(state.iterations() * s.batches);
  state.counters["table_bytes"] = static_cast<double>(s.bytes);
}

// `path`: "fast" reads with the URI as the server printed it (ferry=1: ferry's extensions, the
// same-host fast path over UCX); "spec" drops ferry=1, so the wire is the protocol's own.
void BM_Dipc(benchmark::State& state, std::string transport, std::string body, std::string table,
             ValidationLevel validation, std::string path) {
  if (transport == "ucx" && !transport::UcxAvailable()) {
    state.SkipWithError("this build of ferry has no UCX transport");
    return;
  }
  ServerProc* s = GetServer("dipc", transport, body, table);
  if (s == nullptr) {
    state.SkipWithError("the server process did not start");
    return;
  }
  double connect_total = 0;
  for (auto _ : state) {
    int64_t batches = 0, rows = 0;
    double connect_s = 0, transfer_s = 0;
    const Status st =
        DrainDipc(*s, validation, path == "spec", &batches, &rows, &connect_s, &transfer_s);
    state.SetIterationTime(transfer_s);
    connect_total += connect_s;
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      return;
    }
    if (batches != s->batches || rows != s->rows) {
      state.SkipWithError("the client read a different number of batches or rows");
      return;
    }
  }
  ReportTable(state, *s);
  state.counters["connect_ms"] =
      connect_total * 1e3 / static_cast<double>(std::max<int64_t>(state.iterations(), 1));
}

void BM_Ipc(benchmark::State& state, ValidationLevel validation) {
  ServerProc* s = GetServer("ipc", "unix", "-", "big");
  if (s == nullptr) {
    state.SkipWithError("the server process did not start");
    return;
  }
  for (auto _ : state) {
    int64_t batches = 0, rows = 0;
    const Status st = DrainIpc(*s, validation, &batches, &rows);
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      return;
    }
    if (batches != s->batches || rows != s->rows) {
      state.SkipWithError("the client read a different number of batches or rows");
      return;
    }
  }
  ReportTable(state, *s);
}

void BM_Pyarrow(benchmark::State& state) {
  const char* py = std::getenv("FERRY_BENCH_PYTHON");
  const std::string python = py ? py : SourceDir() + "/.venv/bin/python";
  if (access(python.c_str(), X_OK) != 0) {
    state.SkipWithError(("no Python at " + python + " (set FERRY_BENCH_PYTHON)").c_str());
    return;
  }
  const int reps = static_cast<int>(state.max_iterations);
  int status = 0;
  const std::string out =
      RunCapture({python, SourceDir() + "/bench/dipc/pyarrow_socket.py", "--rows",
                  std::to_string(TheShape().big_rows), "--batches",
                  std::to_string(TheShape().big_batches), "--reps", std::to_string(reps)},
                 {}, &status);
  std::vector<double> times;
  double bytes = 0, batches = 0;
  std::istringstream in(out);
  std::string key;
  double v;
  while (in >> key >> v) {
    if (key == "rep") times.push_back(v);
    if (key == "bytes") bytes = v;
    if (key == "batches") batches = v;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    state.SkipWithError(("(a) skipped: " + out).c_str());
    return;
  }
  if (static_cast<int>(times.size()) != reps || bytes == 0) {
    state.SkipWithError(("pyarrow_socket.py failed: " + out).c_str());
    return;
  }
  size_t i = 0;
  for (auto _ : state) state.SetIterationTime(times[i++ % times.size()]);
  state.SetBytesProcessed(static_cast<int64_t>(static_cast<double>(state.iterations()) * bytes));
  state.SetItemsProcessed(static_cast<int64_t>(static_cast<double>(state.iterations()) * batches));
  state.counters["table_bytes"] = bytes;
}

void Register() {
  using benchmark::RegisterBenchmark;
  const ValidationLevel full = ValidationLevel::kFull, def = ValidationLevel::kDefault;
  // A smoke run takes the command line's --benchmark_min_time.
  auto big = [](benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond);
    if (!Smoke()) b->MinTime(3);
  };
  auto small = [](benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond);
    if (!Smoke()) b->MinTime(2);
  };
  auto socket = [](benchmark::internal::Benchmark* b) {
    b->UseRealTime()->Unit(benchmark::kMillisecond);
    if (!Smoke()) b->MinTime(3);
  };
  auto peer = [](benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);
  };
  RegisterBenchmark("a_pyarrow_ipc_unix_socket", BM_Pyarrow)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(Smoke() ? 1 : 5);
  socket(RegisterBenchmark("b_ferry_ipc_unix_socket", BM_Ipc, full));
  big(RegisterBenchmark("c_dipc_ucx_body0_spec_default", BM_Dipc, "ucx", "0", "big", def, "spec"));
  big(RegisterBenchmark("c_dipc_ucx_body0_fast_default", BM_Dipc, "ucx", "0", "big", def, "fast"));
  big(RegisterBenchmark("c_dipc_ucx_body0_fast_full", BM_Dipc, "ucx", "0", "big", full, "fast"));
  big(RegisterBenchmark("c_dipc_ucx_body0_spec_kept_default", BM_Dipc, "ucx", "0k", "big", def,
                        "spec"));
  big(RegisterBenchmark("c_dipc_ucx_body0_fast_kept_default", BM_Dipc, "ucx", "0k", "big", def,
                        "fast"));
  big(RegisterBenchmark("d_dipc_ucx_body1_spec_default", BM_Dipc, "ucx", "1", "big", def, "spec"));
  big(RegisterBenchmark("d_dipc_ucx_body1_fast_default", BM_Dipc, "ucx", "1", "big", def, "fast"));
  big(RegisterBenchmark("d_dipc_ucx_body1_fast_kept_default", BM_Dipc, "ucx", "1k", "big", def,
                        "fast"));
  big(RegisterBenchmark("e_dipc_shm_body1_full", BM_Dipc, "shm", "1", "big", full, "fast"));
  big(RegisterBenchmark("e_dipc_shm_body1_default", BM_Dipc, "shm", "1", "big", def, "fast"));
  big(RegisterBenchmark("e_dipc_shm_body1_kept_default", BM_Dipc, "shm", "1k", "big", def, "fast"));
  peer(
      RegisterBenchmark("ucx_perftest_tag_bw_64MiB/ucx_default", BM_Perftest, "tag_bw", "", false));
  peer(RegisterBenchmark("ucx_perftest_tag_bw_64MiB/tcp", BM_Perftest, "tag_bw", "tcp", false));
  peer(RegisterBenchmark("ucx_perftest_tag_bw_64MiB/peer_errors_tcp", BM_Perftest, "tag_bw", "tcp",
                         true));
  peer(RegisterBenchmark("ucx_perftest_ucp_get_64MiB/ucx_default", BM_Perftest, "ucp_get", "",
                         false));
  peer(RegisterBenchmark("ucx_perftest_ucp_get_64MiB/tcp", BM_Perftest, "ucp_get", "tcp", false));
  small(RegisterBenchmark("small_batches_shm_body1_default", BM_Dipc, "shm", "1", "small", def,
                          "fast"));
  small(RegisterBenchmark("small_batches_shm_body1_kept_default", BM_Dipc, "shm", "1k", "small",
                          def, "fast"));
  small(RegisterBenchmark("small_batches_ucx_body0_fast_default", BM_Dipc, "ucx", "0", "small", def,
                          "fast"));
  small(RegisterBenchmark("small_batches_ucx_body1_fast_default", BM_Dipc, "ucx", "1", "small", def,
                          "fast"));
}

}  // namespace
}  // namespace ferry::bench

int main(int argc, char** argv) {
  if (const char* role = std::getenv("FERRY_BENCH_ROLE");
      role && std::strcmp(role, "server") == 0) {
    return ferry::bench::ServerMain(argc, argv);
  }
  signal(SIGPIPE, SIG_IGN);
  ferry::bench::Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ferry::bench::SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  ferry::bench::PrintSummary(reporter.figures);
  benchmark::Shutdown();
  ferry::bench::StopServers();
  return 0;
}
