// The transfer benchmark's peers and summary: ucx_perftest runs, and the table of figures with
// the project's goals beside the peers measured in the same run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "bench/dipc/transfer_bench.hpp"

namespace ferry::bench {

using namespace std::chrono_literals;

// Run a command, returning its stdout (and its exit status in *status).
std::string RunCapture(const std::vector<std::string>& args, const std::vector<std::string>& env,
                       int* status) {
  Child c = Spawn(args, env, false, true);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), c.out)) > 0) out.append(buf, n);
  *status = Wait(c);
  return out;
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    Die("finding a free port");
  }
  const int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

void BM_Perftest(benchmark::State& state, std::string test, std::string tls, bool peer_errors) {
  const char* n_env = std::getenv("FERRY_BENCH_PERFTEST_ITERS");
  const std::string n = n_env ? n_env : "50";
  std::vector<std::string> env;
  if (!tls.empty()) env.push_back("UCX_TLS=" + tls);
  for (auto _ : state) {
    double mbps = 0;
    for (int attempt = 0; attempt < 3 && mbps == 0; ++attempt) {
      const std::string port = std::to_string(FreePort());
      std::vector<std::string> common = {
          "-t", test, "-s", std::to_string(TheShape().perftest_bytes), "-n", n, "-p", port};
      if (peer_errors) common.push_back("-e");
      std::vector<std::string> server_args = {"/usr/bin/ucx_perftest"};
      server_args.insert(server_args.end(), common.begin(), common.end());
      if (access(server_args[0].c_str(), X_OK) != 0) {
        state.SkipWithError("no /usr/bin/ucx_perftest (Debian's ucx-utils)");
        return;
      }
      Child server = Spawn(server_args, env, false, true);  // its output is not read
      std::this_thread::sleep_for(500ms);
      std::vector<std::string> client_args = {"/usr/bin/ucx_perftest", "127.0.0.1"};
      client_args.insert(client_args.end(), common.begin(), common.end());
      int status = 0;
      const std::string out = RunCapture(client_args, env, &status);
      kill(server.pid, SIGTERM);
      Wait(server);
      // "Final: iterations p50 avg-overhead overall-overhead avg-MB/s overall-MB/s ..."
      const size_t at = out.find("Final:");
      if (at == std::string::npos) continue;
      std::istringstream in(out.substr(at + 6));
      double iters, p50, avg, overall, bw_avg, bw_overall;
      if (in >> iters >> p50 >> avg >> overall >> bw_avg >> bw_overall) mbps = bw_overall;
    }
    if (mbps == 0) {
      state.SkipWithError("ucx_perftest printed no result");
      return;
    }
    // ucx_perftest's MB is 2^20 bytes.
    const double bytes_per_s = mbps * 1048576.0;
    state.SetIterationTime(static_cast<double>(TheShape().perftest_bytes) / bytes_per_s);
  }
  state.SetBytesProcessed(state.iterations() * TheShape().perftest_bytes);
}

namespace {

std::string Rate(double bytes_per_s) {
  char s[64];
  std::snprintf(s, sizeof(s), "%.2f GB/s", bytes_per_s / 1e9);
  return s;
}

// A goal line: `what` is `value` of `peer`'s figure (a ratio), against `goal`.
void Ratio(const char* what, const Figure* x, const Figure* peer, double goal, bool percent) {
  if (x == nullptr || peer == nullptr || peer->bytes_per_s <= 0) {
    std::printf("  %-66s %s\n", what, "skipped");
    return;
  }
  const double r = x->bytes_per_s / peer->bytes_per_s;
  if (percent) {
    std::printf("  %-66s %6.0f%%  (goal >= %.0f%%: %s)\n", what, r * 100, goal * 100,
                r >= goal ? "met" : "not met");
  } else {
    std::printf("  %-66s %6.1fx  (goal >= %.0fx: %s)\n", what, r, goal,
                r >= goal ? "met" : "not met");
  }
}

}  // namespace

void PrintSummary(const std::map<std::string, Figure>& f) {
  auto find = [&](const std::string& name) -> const Figure* {
    for (const auto& [n, fig] : f) {
      if (n.rfind(name, 0) == 0) return &fig;
    }
    return nullptr;
  };
  std::printf(
      "\nSummary (%s; GB = 1e9 bytes; dipc rows time the connected\n"
      "stream, its set-up shown beside it)\n",
      Smoke() ? "smoke run: a few MiB, figures mean nothing" : "1 GiB, 16 x 64 MiB batches");
  const char* rows[][2] = {
      {"a_pyarrow_ipc_unix_socket", "(a) pyarrow IPC stream over a Unix socket"},
      {"b_ferry_ipc_unix_socket", "(b) ferry IPC stream over a Unix socket, full validation"},
      {"c_dipc_ucx_body0_spec_default", "(c) UCX type 0, protocol wire (TCP), default validation"},
      {"c_dipc_ucx_body0_fast_default", "(c) UCX type 0, fast path (ferry=1), default validation"},
      {"c_dipc_ucx_body0_fast_full", "(c) UCX type 0, fast path (ferry=1), full validation"},
      {"c_dipc_ucx_body0_spec_kept_default", "(c) UCX type 0, protocol wire (TCP), kept, default"},
      {"c_dipc_ucx_body0_fast_kept_default", "(c) UCX type 0, fast path, kept dataset, default"},
      {"d_dipc_ucx_body1_spec_default", "(d) UCX type 1, protocol wire (TCP), default validation"},
      {"d_dipc_ucx_body1_fast_default", "(d) UCX type 1, fast path (ferry=1), default validation"},
      {"d_dipc_ucx_body1_fast_kept_default", "(d) UCX type 1, fast path, kept dataset, default"},
      {"e_dipc_shm_body1_full", "(e) shm type 1, full validation"},
      {"e_dipc_shm_body1_default", "(e) shm type 1, default validation"},
      {"e_dipc_shm_body1_kept_default", "(e) shm type 1, kept dataset, default validation"},
      {"ucx_perftest_tag_bw_64MiB/ucx_default", "ucx_perftest tag_bw 64 MiB, UCX's choice"},
      {"ucx_perftest_tag_bw_64MiB/tcp", "ucx_perftest tag_bw 64 MiB, UCX_TLS=tcp"},
      {"ucx_perftest_tag_bw_64MiB/peer_errors_tcp",
       "ucx_perftest tag_bw 64 MiB, UCX_TLS=tcp, -e (as ferry's endpoints)"},
      {"ucx_perftest_ucp_get_64MiB/ucx_default", "ucx_perftest ucp_get 64 MiB, UCX's choice"},
      {"ucx_perftest_ucp_get_64MiB/tcp", "ucx_perftest ucp_get 64 MiB, UCX_TLS=tcp"},
  };
  for (const auto& [name, label] : rows) {
    const Figure* x = find(name);
    if (x && x->connect_ms > 0) {
      std::printf("  %-66s %10s  %8.1f ms  (+ %.1f ms connect)\n", label,
                  Rate(x->bytes_per_s).c_str(), x->seconds * 1e3, x->connect_ms);
    } else if (x) {
      std::printf("  %-66s %10s  %8.1f ms\n", label, Rate(x->bytes_per_s).c_str(),
                  x->seconds * 1e3);
    } else {
      std::printf("  %-66s %10s\n", label, "skipped");
    }
  }
  const char* small[][2] = {
      {"small_batches_shm_body1_default", "1,000-row batches, shm type 1, default validation"},
      {"small_batches_shm_body1_kept_default", "1,000-row batches, shm type 1, kept, default"},
      {"small_batches_ucx_body0_fast_default", "1,000-row batches, UCX shm (ferry=1), type 0"},
      {"small_batches_ucx_body1_fast_default", "1,000-row batches, UCX shm (ferry=1), type 1"},
  };
  for (const auto& [name, label] : small) {
    if (const Figure* x = find(name)) {
      std::printf("  %-66s %10.0f batches/s\n", label, x->items_per_s);
    }
  }
  if (Smoke()) return;  // a few MiB say nothing of the goals
  std::printf("\nGoals (each against its peer from this run)\n");
  const Figure* a = find("a_pyarrow_ipc_unix_socket");
  Ratio("(e) shm type 1, default / (a)", find("e_dipc_shm_body1_default"), a, 20, false);
  Ratio("(e) shm type 1, kept, default / (a)", find("e_dipc_shm_body1_kept_default"), a, 20, false);
  const Figure* tag_tcp = find("ucx_perftest_tag_bw_64MiB/tcp");
  const Figure* tag_any = find("ucx_perftest_tag_bw_64MiB/ucx_default");
  const Figure* get_tcp = find("ucx_perftest_ucp_get_64MiB/tcp");
  const Figure* get_any = find("ucx_perftest_ucp_get_64MiB/ucx_default");
  Ratio("(c) type 0, protocol wire / perftest tag_bw over TCP",
        find("c_dipc_ucx_body0_spec_default"), tag_tcp, 0.9, true);
  Ratio("(c) type 0, protocol wire, kept / perftest tag_bw over TCP",
        find("c_dipc_ucx_body0_spec_kept_default"), tag_tcp, 0.9, true);
  // ferry's endpoints handle peer errors (a dead peer fails fast); perftest's do only with -e.
  Ratio("(c) type 0, protocol wire, kept / perftest tag_bw TCP -e",
        find("c_dipc_ucx_body0_spec_kept_default"),
        find("ucx_perftest_tag_bw_64MiB/peer_errors_tcp"), 0.9, true);
  Ratio("(c) type 0, fast path, kept / perftest tag_bw, UCX's choice",
        find("c_dipc_ucx_body0_fast_kept_default"), tag_any, 0.9, true);
  Ratio("(c) type 0, fast path / perftest tag_bw, UCX's choice",
        find("c_dipc_ucx_body0_fast_default"), tag_any, 0.9, true);
  Ratio("(c) type 0, fast path, full validation / perftest tag_bw",
        find("c_dipc_ucx_body0_fast_full"), tag_any, 0.8, true);
  Ratio("(d) type 1, protocol wire / perftest ucp_get over TCP",
        find("d_dipc_ucx_body1_spec_default"), get_tcp, 0.8, true);
  Ratio("(d) type 1, fast path / perftest ucp_get, UCX's choice",
        find("d_dipc_ucx_body1_fast_default"), get_any, 0.8, true);
  Ratio("(d) type 1, fast path, kept / perftest ucp_get, UCX's choice",
        find("d_dipc_ucx_body1_fast_kept_default"), get_any, 0.8, true);
  for (const char* name :
       {"small_batches_ucx_body0_fast_default", "small_batches_ucx_body1_fast_default"}) {
    if (const Figure* x = find(name)) {
      std::printf("  %-66s %6.0f/s (goal >= 50,000/s: %s)\n",
                  std::strstr(name, "body0") ? "1,000-row batches through UCX shm, type 0"
                                             : "1,000-row batches through UCX shm, type 1",
                  x->items_per_s, x->items_per_s >= 50000 ? "met" : "not met");
    }
  }
}

}  // namespace ferry::bench
