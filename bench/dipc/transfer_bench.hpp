// Internal to the cross-process transfer benchmark (bench/dipc/transfer_*.cpp): its constants,
// child processes (servers run as this binary again, ucx_perftest), and the summary it prints.
#pragma once

#include <benchmark/benchmark.h>
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ferry/core/result.hpp"

namespace ferry::bench {

/// What the benchmark moves. The full run: 16 batches of ~64 MiB, 20,000 batches of 1,000 rows,
/// ucx_perftest at 64 MiB. A smoke run (FERRY_BENCH_SMOKE=1, inherited by the server processes)
/// moves a few MiB with the shortest timing, to prove in CI that every path still runs.
struct Shape {
  int64_t big_rows;
  int64_t big_batches;
  int64_t small_rows;
  int64_t small_batches;
  int64_t perftest_bytes;
};

/// True in a smoke run.
bool Smoke();
/// The shape of this run.
const Shape& TheShape();

[[noreturn]] void Die(const std::string& what);
void Check(const Status& st, const char* doing);
template <typename T>
T Value(Result<T> r, const char* doing) {
  Check(r.status(), doing);
  return std::move(r).value();
}

/// The source tree (for the pyarrow script and the venv).
std::string SourceDir();

struct Child {
  pid_t pid = -1;
  int in = -1;          // its stdin (write end), or -1
  FILE* out = nullptr;  // its stdout (read end), or NULL
};

/// Run `args` with `env` added to this environment; pipes to its stdin and from its stdout when
/// asked.
Child Spawn(const std::vector<std::string>& args, const std::vector<std::string>& env, bool pipe_in,
            bool pipe_out);
/// Close its pipes and reap it; its wait status.
int Wait(Child& c);
/// Run a command, returning its stdout (and its exit status in *status).
std::string RunCapture(const std::vector<std::string>& args, const std::vector<std::string>& env,
                       int* status);
/// A TCP port on 127.0.0.1 that nothing listens on now.
int FreePort();

struct ServerProc {
  Child child;
  std::string address;  // a dipc URI, or the abstract socket name of the IPC server
  int64_t bytes = 0, batches = 0, rows = 0;
};

/// The server for (kind, transport, body, table), started on first use; NULL if it failed.
ServerProc* GetServer(const std::string& kind, const std::string& transport,
                      const std::string& body, const std::string& table);
void StopServers();
/// The server role: `FERRY_BENCH_ROLE=server transfer_bench KIND TRANSPORT BODY TABLE`.
int ServerMain(int argc, char** argv);
/// A connected socket to the IPC server's abstract socket `name`.
Result<int> ConnectUnix(const std::string& name);

/// ucx_perftest between two processes on 127.0.0.1 at 64 MiB: `test` is tag_bw or ucp_get;
/// `tls` empty leaves UCX to choose its transports.
void BM_Perftest(benchmark::State& state, std::string test, std::string tls, bool peer_errors);

struct Figure {
  double bytes_per_s = 0;
  double items_per_s = 0;
  double seconds = 0;     // per iteration
  double connect_ms = 0;  // a dipc connection's set-up, outside `seconds`
};

/// Keeps each benchmark's figure (the median when repeated) while the console reports.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, Figure> figures;

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const bool aggregate = r.run_type == Run::RT_Aggregate;
      if (aggregate && r.aggregate_name != "median") continue;
      Figure f;
      auto get = [&](const char* name) {
        auto it = r.counters.find(name);
        return it == r.counters.end() ? 0.0 : static_cast<double>(it->second);
      };
      f.bytes_per_s = get("bytes_per_second");
      f.items_per_s = get("items_per_second");
      f.connect_ms = get("connect_ms");
      f.seconds = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      // A median replaces the repetitions; without repetitions the single run stands.
      const std::string name = r.run_name.str();
      if (aggregate || !medians_.count(name)) figures[name] = f;
      if (aggregate) medians_[name] = true;
    }
    ConsoleReporter::ReportRuns(runs);
  }

 private:
  std::map<std::string, bool> medians_;
};

/// The summary table and the project's goals, each figure beside its peer from the same run.
void PrintSummary(const std::map<std::string, Figure>& figures);

}  // namespace ferry::bench
