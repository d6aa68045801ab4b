// Over 600 lines: one benchmark program (servers, peers, timing, JSON) kept whole to run as one.
// Issue 6's transfer benchmark: a 1 GiB table of mixed columns (int64, double, short string,
// list<int32>) in 16 batches of 64 MiB, moved from a server process to this one:
//   (a) pyarrow IPC stream over a Unix socket, pyarrow on both ends (bench/dipc/pyarrow_socket.py)
//   (b) ferry's standard IPC stream over a Unix socket (StreamWriter -> socket -> Decoder)
//   (c) dipc over UCX, body type 0 (packed bodies as tagged messages)
//   (d) dipc over UCX, body type 1 (buffer lists; the client fetches with RMA gets)
//   (e) dipc over shared memory, body type 1 (the client reads in place)
// with `ucx_perftest -t tag_bw` at 64 MiB measured in the same run, and the rate of 1,000-row
// batches through shared memory. Every server is this binary run again (/proc/self/exe with
// FERRY_BENCH_ROLE=server), started once per configuration and serving every iteration; each
// iteration connects, drains every batch (releasing each as it comes) and disconnects.
//
// Environment: FERRY_BENCH_PYTHON (default <source>/.venv/bin/python) runs (a);
// FERRY_BENCH_PERFTEST_ITERS (default 20) sets ucx_perftest's -n.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/dataset.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry/transport/ucx.hpp"

extern char** environ;

namespace ferry::bench {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kBigRows = 1725000;  // ~64 MiB of the mixed columns
constexpr int64_t kBigBatches = 16;
constexpr int64_t kSmallRows = 1000;
constexpr int64_t kSmallBatches = 20000;
constexpr int64_t kPerftestSize = int64_t{64} << 20;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "transfer_bench: %s\n", what.c_str());
  std::exit(2);
}
void Check(const Status& st, const char* doing) {
  if (!st.ok()) Die(std::string(doing) + ": " + st.message());
}
template <typename T>
T Value(Result<T> r, const char* doing) {
  Check(r.status(), doing);
  return std::move(r).value();
}

// ---------------------------------------------------------------------------------------------
// Data (built by the server processes)

struct Table {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  int64_t rows = 0;
  int64_t bytes = 0;  // buffer bytes as the layout implies them, all batches
};

// Bytes of a batch's buffers (visible slice and offsets included), as `ferry get` counts them.
int64_t BatchBytes(const ArrowSchema* schema, const ArrowDeviceArray* batch) {
  DeviceArrayView view = Value(DeviceArrayView::Make(schema), "view");
  Check(view.SetArray(batch), "view");
  int64_t total = 0;
  std::function<void(const ArrayView&)> walk = [&](const ArrayView& v) {
    for (int64_t i = 0; i < v.n_buffers(); ++i) total += v.buffer(i).size_bytes;
    for (int64_t i = 0; i < v.n_children(); ++i) walk(v.child(i));
  };
  walk(view.array_view());
  return total;
}

UniqueDeviceArray OnCpu(UniqueArray a) {
  UniqueDeviceArray d;
  a.move_to(&d->array);
  d->device_id = -1;
  d->device_type = ARROW_DEVICE_CPU;
  return d;
}

// Row i of the mixed table: i, i * 0.5, "value <i % 1000>", [0 .. i % 4) (bench/ipc's shape).
// The small table: i, i * 0.5. One batch is built, then copied `count` times (distinct memory).
Table MakeTable(bool small) {
  Table t;
  Field root =
      small ? Field::Make("+s", "", {Field::Make("l", "i"), Field::Make("g", "d")})
            : Field::Make("+s", "",
                          {Field::Make("l", "i"), Field::Make("g", "d"), Field::Make("u", "s"),
                           Field::Make("+l", "list", {Field::Make("i", "item")})});
  root.flags = 0;
  t.schema = Value(root.Export(), "schema");
  const int64_t rows = small ? kSmallRows : kBigRows;
  const int64_t count = small ? kSmallBatches : kBigBatches;
  auto b = Value(ArrayBuilder::Make(t.schema.get()), "builder");
  for (int64_t i = 0; i < rows; ++i) {
    Check(b->child(0)->AppendInt(i), "append");
    Check(b->child(1)->AppendDouble(static_cast<double>(i) * 0.5), "append");
    if (!small) {
      Check(b->child(2)->AppendBytes("value " + std::to_string(i % 1000)), "append");
      for (int64_t k = 0; k < i % 4; ++k) Check(b->child(3)->child(0)->AppendInt(k), "append");
      Check(b->child(3)->FinishElement(), "append");
    }
    Check(b->FinishElement(), "append");
  }
  UniqueDeviceArray one = OnCpu(Value(b->Finish(), "finish"));
  DeviceArrayView view = Value(DeviceArrayView::Make(t.schema.get()), "view");
  Check(view.SetArray(one.get()), "view");
  for (int64_t i = 0; i < count; ++i) {
    t.batches.push_back(Value(view.Copy(*CpuDevice()), "copy"));
    t.rows += rows;
  }
  t.bytes = BatchBytes(t.schema.get(), one.get()) * count;
  return t;
}

// ---------------------------------------------------------------------------------------------
// Server role: `FERRY_BENCH_ROLE=server transfer_bench KIND TRANSPORT BODY TABLE`, KIND "dipc"
// or "ipc". Prints "READY <uri or socket> <bytes> <batches> <rows>" and serves until stdin
// closes.

Result<int> ListenUnix(const std::string& name) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status(errno, "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());  // abstract namespace
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 8) != 0) {
    return Status(errno, std::string("listening on @") + name + ": " + std::strerror(errno));
  }
  return fd;
}

Result<int> ConnectUnix(const std::string& name) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status(errno, "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    close(fd);
    return Status(err, std::string("connecting to @") + name + ": " + std::strerror(err));
  }
  return fd;
}

int ServerMain(int argc, char** argv) {
  if (argc != 5) Die("server role: KIND TRANSPORT BODY TABLE");
  const std::string kind = argv[1], transport = argv[2], body = argv[3], table = argv[4];
  signal(SIGPIPE, SIG_IGN);
  Table t = MakeTable(table == "small");
  const int64_t bytes = t.bytes, rows = t.rows, batches = static_cast<int64_t>(t.batches.size());
  std::string where;
  std::unique_ptr<dipc::Server> server;
  int listen_fd = -1;
  std::thread ipc_thread;
  if (kind == "ipc") {
    // The standard stream format, written straight into each accepted socket.
    where = "ferry-bench-ipc-" + std::to_string(getpid());
    listen_fd = Value(ListenUnix(where), "listen");
    ipc_thread = std::thread([&t, listen_fd] {
      while (true) {
        const int c = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
          if (errno == EINTR) continue;
          return;
        }
        std::unique_ptr<ipc::FileSink> sink = ipc::FileSink::FromFd(c, /*owned=*/true);
        Result<ipc::StreamWriter> w = ipc::StreamWriter::Open(sink.get(), t.schema.get());
        Status st = w.status();
        for (size_t i = 0; st.ok() && i < t.batches.size(); ++i) {
          st = w->WriteDeviceBatch(t.batches[i].get());
        }
        if (st.ok()) st = w->Close();
        if (st.ok()) st = sink->Close();
        if (!st.ok()) std::fprintf(stderr, "transfer_bench server: %s\n", st.message().c_str());
      }
    });
  } else {
    dipc::ServerOptions o;
    o.transport = transport;
    if (transport == "ucx") o.address = "127.0.0.1:0";
    o.body_type = body == "0" ? dipc::BodyType::kPacked : dipc::BodyType::kBufferList;
    server = Value(dipc::Server::Start(o), "starting the server");
    auto dataset =
        Value(dipc::Dataset::FromBatches(std::move(t.schema), std::move(t.batches)), "dataset");
    if (body == "1k") {
      // Kept: the bodies are written into a region of their own once and lent to every client.
      const Status st = server->Keep("table", dataset);
      if (!st.ok()) {
        std::fprintf(stderr, "transfer_bench server: keeping the table: %s\n",
                     st.message().c_str());
        std::exit(1);
      }
    } else {
      server->Add("table", dataset);
    }
    where = server->uri().ToString();
  }
  std::printf("READY %s %lld %lld %lld\n", where.c_str(), static_cast<long long>(bytes),
              static_cast<long long>(batches), static_cast<long long>(rows));
  std::fflush(stdout);
  char buf[256];
  while (read(STDIN_FILENO, buf, sizeof(buf)) > 0) {
  }
  if (server) {
    if (!server->last_error().empty()) {
      std::fprintf(stderr, "transfer_bench server: last error: %s\n", server->last_error().c_str());
    }
    server->Stop();
  }
  if (listen_fd >= 0) shutdown(listen_fd, SHUT_RDWR);
  std::fflush(stderr);
  _exit(0);  // the IPC thread may sit in accept or a write
}

// ---------------------------------------------------------------------------------------------
// Child processes

struct Child {
  pid_t pid = -1;
  int in = -1;          // its stdin (write end), or -1
  FILE* out = nullptr;  // its stdout (read end), or NULL
};

// Run `args` with `env` added to this environment; pipes to its stdin and from its stdout when
// asked.
Child Spawn(const std::vector<std::string>& args, const std::vector<std::string>& env, bool pipe_in,
            bool pipe_out) {
  std::vector<std::string> envs = env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string s = *e;
    const std::string name = s.substr(0, s.find('='));
    bool overridden = false;
    for (const std::string& x : env) overridden |= x.substr(0, x.find('=')) == name;
    if (!overridden) envs.push_back(s);
  }
  std::vector<char*> argv, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : envs) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (pipe_in && pipe2(in, O_CLOEXEC) != 0) Die("pipe");
  if (pipe_out && pipe2(out, O_CLOEXEC) != 0) Die("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (pipe_in) posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  if (pipe_out) posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  Child c;
  const int rc = posix_spawn(&c.pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) Die("spawning " + args[0] + ": " + std::strerror(rc));
  if (pipe_in) {
    close(in[0]);
    c.in = in[1];
  }
  if (pipe_out) {
    close(out[1]);
    c.out = fdopen(out[0], "r");
  }
  return c;
}

int Wait(Child& c) {
  if (c.in >= 0) close(c.in);
  int status = 0;
  if (c.pid > 0) waitpid(c.pid, &status, 0);
  if (c.out != nullptr) fclose(c.out);
  c = Child{};
  return status;
}

struct ServerProc {
  Child child;
  std::string address;  // a dipc URI, or the abstract socket name of the IPC server
  int64_t bytes = 0, batches = 0, rows = 0;
};

std::map<std::string, ServerProc>& Servers() {
  static auto* servers = new std::map<std::string, ServerProc>();
  return *servers;
}

// The server for (kind, transport, body, table), started on first use; NULL if it failed.
ServerProc* GetServer(const std::string& kind, const std::string& transport,
                      const std::string& body, const std::string& table) {
  const std::string key = kind + "/" + transport + "/" + body + "/" + table;
  auto it = Servers().find(key);
  if (it != Servers().end()) return &it->second;
  ServerProc s;
  s.child = Spawn({"/proc/self/exe", kind, transport, body, table}, {"FERRY_BENCH_ROLE=server"},
                  true, true);
  char line[4096];
  if (std::fgets(line, sizeof(line), s.child.out) == nullptr) {
    Wait(s.child);
    return nullptr;
  }
  char address[4000];
  long long bytes = 0, batches = 0, rows = 0;
  if (std::sscanf(line, "READY %3999s %lld %lld %lld", address, &bytes, &batches, &rows) != 4) {
    Wait(s.child);
    return nullptr;
  }
  s.address = address;
  s.bytes = bytes;
  s.batches = batches;
  s.rows = rows;
  return &Servers().emplace(key, std::move(s)).first->second;
}

void StopServers() {
  for (auto& [key, s] : Servers()) Wait(s.child);
  Servers().clear();
}

// ---------------------------------------------------------------------------------------------
// Clients

// Drain a dipc stream; returns (batches, rows). Each batch is released as it comes.
Status DrainDipc(const ServerProc& s, ValidationLevel validation, int64_t* batches, int64_t* rows) {
  FERRY_ASSIGN_OR_RAISE(dipc::Uri uri, dipc::Uri::Parse(s.address));
  dipc::ClientOptions o;
  o.read.validation = validation;
  FERRY_ASSIGN_OR_RAISE(UniqueDeviceArrayStream stream, dipc::ConnectStream(uri, "table", o));
  ArrowDeviceArrayStream* st = stream.get();
  while (true) {
    UniqueDeviceArray batch;
    FERRY_RETURN_NOT_OK(StreamGetNext(st, batch.get()));
    if (!batch.valid()) break;
    ++*batches;
    *rows += batch->array.length;
  }
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
    if (!mem) return Status(ENOMEM, "out of memory");
    if (!RecvExactly(fd, mem.get(), need)) {
      if (decoder.between_messages()) break;
      return Status(EPIPE, "the IPC stream ended early");
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

// ---------------------------------------------------------------------------------------------
// Benchmarks

std::string SourceDir() { return FERRY_SOURCE_DIR; }

void ReportTable(benchmark::State& state, const ServerProc& s) {
  state.SetBytesProcessed(state.iterations() * s.bytes);
  state.SetItemsProcessed(state.iterations() * s.batches);
  state.counters["table_bytes"] = static_cast<double>(s.bytes);
}

void BM_Dipc(benchmark::State& state, std::string transport, std::string body, std::string table,
             ValidationLevel validation) {
  if (transport == "ucx" && !transport::UcxAvailable()) {
    state.SkipWithError("this build of ferry has no UCX transport");
    return;
  }
  ServerProc* s = GetServer("dipc", transport, body, table);
  if (s == nullptr) {
    state.SkipWithError("the server process did not start");
    return;
  }
  for (auto _ : state) {
    int64_t batches = 0, rows = 0;
    const Status st = DrainDipc(*s, validation, &batches, &rows);
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

void BM_Pyarrow(benchmark::State& state) {
  const char* py = std::getenv("FERRY_BENCH_PYTHON");
  const std::string python = py ? py : SourceDir() + "/.venv/bin/python";
  if (access(python.c_str(), X_OK) != 0) {
    state.SkipWithError(("no Python at " + python + " (set FERRY_BENCH_PYTHON)").c_str());
    return;
  }
  const int reps = static_cast<int>(state.max_iterations);
  int status = 0;
  const std::string out = RunCapture(
      {python, SourceDir() + "/bench/dipc/pyarrow_socket.py", "--rows", std::to_string(kBigRows),
       "--batches", std::to_string(kBigBatches), "--reps", std::to_string(reps)},
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

// ucx_perftest -t tag_bw at 64 MiB between two processes on 127.0.0.1; `tls` empty leaves UCX
// to choose its transports (shared memory between processes of one host).
void BM_Perftest(benchmark::State& state, std::string tls) {
  const char* n_env = std::getenv("FERRY_BENCH_PERFTEST_ITERS");
  const std::string n = n_env ? n_env : "20";
  std::vector<std::string> env;
  if (!tls.empty()) env.push_back("UCX_TLS=" + tls);
  for (auto _ : state) {
    double mbps = 0;
    for (int attempt = 0; attempt < 3 && mbps == 0; ++attempt) {
      const std::string port = std::to_string(FreePort());
      const std::vector<std::string> common = {"-t", "tag_bw", "-s", std::to_string(kPerftestSize),
                                               "-n", n,        "-p", port};
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
    state.SetIterationTime(static_cast<double>(kPerftestSize) / bytes_per_s);
  }
  state.SetBytesProcessed(state.iterations() * kPerftestSize);
}

// ---------------------------------------------------------------------------------------------
// The summary: each benchmark's throughput, kept by a reporter that wraps the console one.

struct Figure {
  double bytes_per_s = 0;
  double items_per_s = 0;
  double seconds = 0;  // per iteration
};

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

std::string Rate(double bytes_per_s) {
  char s[64];
  std::snprintf(s, sizeof(s), "%.2f GB/s", bytes_per_s / 1e9);
  return s;
}

void PrintSummary(const std::map<std::string, Figure>& f) {
  auto find = [&](const std::string& prefix) -> const Figure* {
    for (const auto& [name, fig] : f) {
      if (name.rfind(prefix, 0) == 0) return &fig;
    }
    return nullptr;
  };
  std::printf("\nSummary (1 GiB, 16 x 64 MiB batches; GB = 1e9 bytes)\n");
  const char* rows[][2] = {
      {"a_pyarrow_ipc_unix_socket", "(a) pyarrow IPC stream over a Unix socket"},
      {"b_ferry_ipc_unix_socket", "(b) ferry IPC stream over a Unix socket, full validation"},
      {"c_dipc_ucx_body0_full", "(c) dipc UCX body type 0, full validation"},
      {"c_dipc_ucx_body0_default", "(c) dipc UCX body type 0, default validation"},
      {"d_dipc_ucx_body1", "(d) dipc UCX body type 1, full validation"},
      {"e_dipc_shm_body1_full", "(e) dipc shm body type 1, full validation"},
      {"e_dipc_shm_body1_default", "(e) dipc shm body type 1, default validation"},
      {"e_dipc_shm_body1_kept_full", "(e) dipc shm body type 1, kept dataset, full validation"},
      {"e_dipc_shm_body1_kept_default",
       "(e) dipc shm body type 1, kept dataset, default validation"},
      {"ucx_perftest_tag_bw_64MiB/ucx_default", "ucx_perftest tag_bw 64 MiB, UCX's choice"},
      {"ucx_perftest_tag_bw_64MiB/tcp", "ucx_perftest tag_bw 64 MiB, UCX_TLS=tcp"},
  };
  for (const auto& [name, label] : rows) {
    const Figure* x = find(name);
    if (x) {
      std::printf("  %-58s %10s  %8.1f ms\n", label, Rate(x->bytes_per_s).c_str(),
                  x->seconds * 1e3);
    } else {
      std::printf("  %-58s %10s\n", label, "skipped");
    }
  }
  const Figure* small_full = find("small_batches_shm_body1_full");
  const Figure* small_default = find("small_batches_shm_body1_default");
  const Figure* small_kept = find("small_batches_shm_body1_kept_default");
  if (small_full) {
    std::printf("  %-58s %10.0f batches/s\n", "1,000-row batches, shm body 1, full validation",
                small_full->items_per_s);
  }
  if (small_default) {
    std::printf("  %-58s %10.0f batches/s\n", "1,000-row batches, shm body 1, default validation",
                small_default->items_per_s);
  }
  if (small_kept) {
    std::printf("  %-58s %10.0f batches/s\n", "1,000-row batches, shm body 1, kept, default",
                small_kept->items_per_s);
  }
  std::printf("\nGoals\n");
  const Figure* a = find("a_pyarrow_ipc_unix_socket");
  for (const char* e_name : {"e_dipc_shm_body1_full", "e_dipc_shm_body1_default",
                             "e_dipc_shm_body1_kept_full", "e_dipc_shm_body1_kept_default"}) {
    const Figure* e = find(e_name);
    if (a && e && a->bytes_per_s > 0) {
      const double r = e->bytes_per_s / a->bytes_per_s;
      std::printf("  %-58s %8.1fx  (goal >= 20x: %s)\n",
                  (std::string("(e) / (a), ") + (std::strstr(e_name, "kept") ? "kept, " : "") +
                   (std::strstr(e_name, "full") ? "full" : "default") + " validation")
                      .c_str(),
                  r, r >= 20 ? "met" : "not met");
    }
  }
  for (const char* c_name : {"c_dipc_ucx_body0_full", "c_dipc_ucx_body0_default"}) {
    const Figure* c = find(c_name);
    for (const char* p_name :
         {"ucx_perftest_tag_bw_64MiB/ucx_default", "ucx_perftest_tag_bw_64MiB/tcp"}) {
      const Figure* p = find(p_name);
      if (c && p && p->bytes_per_s > 0) {
        const double r = c->bytes_per_s / p->bytes_per_s;
        std::printf(
            "  %-58s %8.0f%%  (goal >= 80%%: %s)\n",
            (std::string("(c) ") + (std::strstr(c_name, "full") ? "full" : "default") +
             " / ucx_perftest, " + (std::strstr(p_name, "tcp") ? "UCX_TLS=tcp" : "UCX's choice"))
                .c_str(),
            r * 100, r >= 0.8 ? "met" : "not met");
      }
    }
  }
  for (const Figure* s : {small_full, small_default, small_kept}) {
    if (!s) continue;
    std::printf("  %-58s %8.0f/s (goal >= 100,000/s: %s)\n",
                s == small_full      ? "1,000-row batches, full validation"
                : s == small_default ? "1,000-row batches, default validation"
                                     : "1,000-row batches, kept, default validation",
                s->items_per_s, s->items_per_s >= 100000 ? "met" : "not met");
  }
}

void Register() {
  using benchmark::RegisterBenchmark;
  const ValidationLevel full = ValidationLevel::kFull, def = ValidationLevel::kDefault;
  auto big = [](benchmark::internal::Benchmark* b) {
    b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(3);
  };
  RegisterBenchmark("a_pyarrow_ipc_unix_socket", BM_Pyarrow)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(5);
  big(RegisterBenchmark("b_ferry_ipc_unix_socket", BM_Ipc, full));
  big(RegisterBenchmark("c_dipc_ucx_body0_full", BM_Dipc, "ucx", "0", "big", full));
  big(RegisterBenchmark("c_dipc_ucx_body0_default", BM_Dipc, "ucx", "0", "big", def));
  big(RegisterBenchmark("d_dipc_ucx_body1", BM_Dipc, "ucx", "1", "big", full));
  big(RegisterBenchmark("e_dipc_shm_body1_full", BM_Dipc, "shm", "1", "big", full));
  big(RegisterBenchmark("e_dipc_shm_body1_default", BM_Dipc, "shm", "1", "big", def));
  big(RegisterBenchmark("e_dipc_shm_body1_kept_full", BM_Dipc, "shm", "1k", "big", full));
  big(RegisterBenchmark("e_dipc_shm_body1_kept_default", BM_Dipc, "shm", "1k", "big", def));
  RegisterBenchmark("ucx_perftest_tag_bw_64MiB/ucx_default", BM_Perftest, "")
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1);
  RegisterBenchmark("ucx_perftest_tag_bw_64MiB/tcp", BM_Perftest, "tcp")
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1);
  RegisterBenchmark("small_batches_shm_body1_full", BM_Dipc, "shm", "1", "small", full)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(2);
  RegisterBenchmark("small_batches_shm_body1_default", BM_Dipc, "shm", "1", "small", def)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(2);
  RegisterBenchmark("small_batches_shm_body1_kept_default", BM_Dipc, "shm", "1k", "small", def)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(2);
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
