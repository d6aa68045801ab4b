// The demo's last act: the table crosses from a `ferry serve` process to `ferry get` processes
// over shared memory and over UCX. A warm-up checks what arrives value by value; a timed transfer
// of at least --transfer-mib MiB then measures steady-state throughput, with process start-up
// measured apart.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "demo.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/stream.hpp"
#include "ferry/ipc/reader.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry/transport/ucx.hpp"

extern char** environ;

namespace ferry::cli {

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int TransferFail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "ferry demo: %s: %s\n", what.c_str(), st.message().c_str());
  return 1;
}

// A child process running this same executable, with its stdout on a pipe.
struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
  Clock::time_point started;
};

std::string ReadLine(FILE* f) {
  std::string line;
  for (int ch = std::fgetc(f); ch != EOF && ch != '\n'; ch = std::fgetc(f)) {
    line.push_back(static_cast<char>(ch));
  }
  return line;
}

int Wait(Child* c) {
  int status = 0;
  waitpid(c->pid, &status, 0);
  if (c->out != nullptr) std::fclose(c->out);
  c->out = nullptr;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What one `ferry get` reported and how long its process lived.
struct GetRun {
  int exit_code = 1;
  std::string why;  // the last line it wrote on stderr, when it failed
  int64_t bytes = 0;
  double transfer_s = 0;  // the client's own figure: connect, receive, validate
  double process_s = 0;   // spawn to exit
};

// The demo's one use of `ferry serve` and `ferry get`: every command line they are given is
// built here. Children's stderr goes to a file per role (`stem`-serve.err, `stem`-get.err), so a
// failure can say why, unless verbose (then it is the demo's own).
class CliPeers {
 public:
  CliPeers(bool verbose, const std::string& stem)
      : verbose_(verbose), serve_err_(stem + "-serve.err"), get_err_(stem + "-get.err") {}
  ~CliPeers() {
    std::remove(serve_err_.c_str());
    std::remove(get_err_.c_str());
  }
  CliPeers(const CliPeers&) = delete;
  CliPeers& operator=(const CliPeers&) = delete;

  // `ferry serve` with NAME=FILE datasets; fills `uris` (NAME -> URI) from its first lines.
  Result<Child> Serve(const std::string& transport, const std::string& body,
                      const std::vector<std::pair<std::string, std::string>>& datasets,
                      std::map<std::string, std::string>* uris) {
    std::vector<std::string> args{"ferry", "serve", "--transport", transport, "--body-type", body};
    for (const auto& [name, path] : datasets)
      args.push_back(std::string(name).append("=").append(path));
    FERRY_ASSIGN_OR_RAISE(Child server, Spawn(args, serve_err_));
    for (size_t i = 0; i < datasets.size(); ++i) {
      const std::string line = ReadLine(server.out);
      const size_t space = line.find(' ');
      if (space == std::string::npos) {
        kill(server.pid, SIGKILL);
        Wait(&server);
        return Status::IOError("`ferry serve` printed no URI (run with --verbose to see why)");
      }
      (*uris)[line.substr(0, space)] = line.substr(space + 1);
    }
    return server;
  }

  // `ferry get URI --ticket NAME`, writing to `to` when not empty; waits for it to exit.
  GetRun Get(const std::string& uri, const std::string& ticket, const std::string& validation,
             const std::string& to) {
    std::vector<std::string> args{"ferry", "get",          uri,        "--ticket",
                                  ticket,  "--validation", validation, "--no-progress"};
    if (!to.empty()) {
      args.emplace_back("--to");
      args.push_back(to);
      args.emplace_back("--force");  // each path's check overwrites the last one's file
    }
    GetRun run;
    Result<Child> client = Spawn(args, get_err_);
    if (!client.ok()) return run;
    // "NAME: N batches, R rows, B bytes in T s (X MB/s) on cpu...".
    const std::string summary = ReadLine(client->out);
    run.exit_code = Wait(&*client);
    run.process_s = Since(client->started);
    if (run.exit_code != 0) run.why = WhyLine(get_err_);
    const size_t colon = summary.find(": ");
    long long batches = 0;
    long long rows = 0;
    long long bytes = 0;
    double seconds = 0;
    // The line is `ferry get`'s own summary; one that does not match all four fails the run.
    if (colon == std::string::npos ||
        // NOLINTNEXTLINE(bugprone-unchecked-string-to-number-conversion)
        std::sscanf(summary.c_str() + colon + 2, "%lld batches, %lld rows, %lld bytes in %lf s",
                    &batches, &rows, &bytes, &seconds) != 4) {
      if (run.exit_code == 0) run.exit_code = 1;
      return run;
    }
    run.bytes = bytes;
    run.transfer_s = seconds;
    return run;
  }

 private:
  // The line of `path` that says why a child failed: UCX's report of a fatal signal or a failed
  // check where there is one (its backtrace follows it, ending in a row of '='), else the last
  // non-empty line (empty when there is none).
  static std::string WhyLine(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return {};
    std::string last;
    std::string cause;
    for (std::string line = ReadLine(f); !line.empty() || !std::feof(f); line = ReadLine(f)) {
      if (line.empty()) continue;
      last = line;
      if (cause.empty() && (line.find("Caught signal") != std::string::npos ||
                            line.find("Assertion") != std::string::npos ||
                            line.find(" Bug: ") != std::string::npos)) {
        cause = line;
      }
    }
    std::fclose(f);
    return cause.empty() ? last : cause;
  }

  Result<Child> Spawn(const std::vector<std::string>& args, const std::string& err_path) {
    if (verbose_) {
      std::string line;
      for (const std::string& a : args) line += (line.empty() ? "" : " ") + a;
      std::fprintf(stderr, "ferry demo: running %s\n", line.c_str());
    }
    int fds[2];
    if (pipe(fds) != 0) return Status::IOError("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    if (!verbose_) {
      posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0600);
    }
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    Child c;
    c.started = Clock::now();
    const int rc = posix_spawn(&c.pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
      close(fds[0]);
      return Status::FromErrno(rc, "could not start " + args[0] + " " + args[1]);
    }
    c.out = fdopen(fds[0], "r");
    return c;
  }

  bool verbose_;
  std::string serve_err_;
  std::string get_err_;
};

// Write the table as an IPC stream in `batches` slices (the slices share the table's buffers),
// `repeat` times over, keeping each slice's JSON rendering in `expected` when it is given.
Status WriteTable(const Array& table, const std::string& path, int64_t batches, int64_t repeat,
                  std::vector<std::string>* expected) {
  FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(table.schema()));
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<ipc::FileSink> sink, ipc::FileSink::Open(path));
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer,
                        ipc::StreamWriter::Open(sink.get(), table.schema()));
  const int64_t rows = table.array()->length;
  const int64_t step = std::max<int64_t>(1, (rows + batches - 1) / batches);
  for (int64_t r = 0; r < repeat; ++r) {
    for (int64_t at = 0; at < rows; at += step) {
      ArrowArray slice = *table.array();  // a borrowed view: the writer only reads it
      slice.offset += at;
      slice.length = std::min(step, rows - at);
      FERRY_RETURN_NOT_OK(writer.WriteBatch(&slice));
      if (expected == nullptr) continue;
      FERRY_RETURN_NOT_OK(view.SetArray(&slice));
      FERRY_ASSIGN_OR_RAISE(std::string json, ArrayToJson(view));
      expected->push_back(std::move(json));
    }
  }
  FERRY_RETURN_NOT_OK(writer.Close());
  return sink->Close();
}

// Each batch of an IPC stream file, rendered as JSON.
Result<std::vector<std::string>> ReadBatches(const std::string& path) {
  FERRY_ASSIGN_OR_RAISE(UniqueArrayStream stream, ipc::ReadPath(path));
  return StreamToJson(stream.get());
}

// The bytes `ferry get` counts for one copy of the table (its batches' visible buffers), found
// by sending the check dataset once; the bulk file repeats the table until the target is met.
int64_t Repeats(int64_t target, int64_t table_bytes) {
  return std::max<int64_t>(1, (target + table_bytes - 1) / std::max<int64_t>(1, table_bytes));
}

}  // namespace

int ProcessTransfers(const Array& table, const DemoOptions& options, std::vector<DemoRow>* rows) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = std::string(tmp != nullptr ? tmp : "/tmp");
  const std::string stem = dir + "/ferry-demo-" + std::to_string(getpid());
  const std::string source = stem + "-table.arrows";
  const std::string bulk = stem + "-bulk.arrows";
  const std::string received = stem + "-received.arrows";
  std::vector<std::string> want;
  Status st = WriteTable(table, source, 8, 1, &want);
  if (!st.ok()) return TransferFail("writing " + source, st);

  struct Path {
    const char* transport;
    const char* body;
    const char* what;
  };
  const Path paths[] = {{"shm", "list", "serve -> get: shared memory, type 1 (pairs)"},
                        {"shm", "packed", "serve -> get: Unix socket, type 0 (packed)"},
                        {"ucx", "list", "serve -> get: UCX, type 1 (RMA get)"},
                        {"ucx", "packed", "serve -> get: UCX, type 0 (tagged)"}};
  CliPeers peers(options.verbose, stem);
  const int64_t target = options.transfer_mib << 20;
  int rc = 0;
  bool bulk_written = false;
  for (const Path& p : paths) {
    DemoRow row;
    row.step = p.what;
    if (std::string(p.transport) == "ucx" && !transport::UcxAvailable()) {
      row.result = "skipped: this build has no UCX";
      rows->push_back(std::move(row));
      continue;
    }
    std::map<std::string, std::string> uris;
    Clock::time_point launched = Clock::now();
    // The bulk dataset is written once the check dataset's size on the wire is known.
    std::vector<std::pair<std::string, std::string>> datasets{{"check", source}};
    if (bulk_written) datasets.emplace_back("bulk", bulk);
    Result<Child> server = peers.Serve(p.transport, p.body, datasets, &uris);
    if (!server.ok()) return TransferFail("starting `ferry serve`", server.status());
    double server_ready_s = Since(launched);
    // Warm-up: the whole table once, written to a file and compared value by value.
    GetRun check = peers.Get(uris["check"], "check", "full", received);
    std::string verdict;
    if (check.exit_code != 0) {
      verdict = "FAILED: `ferry get` exited " + std::to_string(check.exit_code);
      if (!check.why.empty()) verdict += ": " + check.why;
    } else {
      Result<std::vector<std::string>> got = ReadBatches(received);
      verdict = got.ok() && *got == want ? "identical, value by value" : "FAILED: values differ";
    }
    if (!bulk_written && check.exit_code == 0) {
      // Now the size is known: a bulk file of at least the target, served from a fresh server.
      st = WriteTable(table, bulk, 8, Repeats(target, check.bytes), nullptr);
      if (!st.ok()) {
        kill(server->pid, SIGTERM);
        Wait(&*server);
        return TransferFail("writing " + bulk, st);
      }
      bulk_written = true;
      kill(server->pid, SIGTERM);
      Wait(&*server);
      uris.clear();
      launched = Clock::now();
      server = peers.Serve(p.transport, p.body, {{"check", source}, {"bulk", bulk}}, &uris);
      if (!server.ok()) return TransferFail("starting `ferry serve`", server.status());
      server_ready_s = Since(launched);
      check = peers.Get(uris["check"], "check", "full", "");  // the warm-up for the new server
    }
    GetRun timed;
    if (check.exit_code == 0) timed = peers.Get(uris["bulk"], "bulk", "default", "");
    kill(server->pid, SIGTERM);
    Wait(&*server);
    if (check.exit_code == 0 && timed.exit_code != 0) {
      verdict = "FAILED: the timed `ferry get` exited " + std::to_string(timed.exit_code);
      if (!timed.why.empty()) verdict += ": " + timed.why;
    }
    if (verdict.rfind("FAILED", 0) == 0) rc = 1;
    char startup[64];
    std::snprintf(startup, sizeof(startup), "server %.0f ms, get %.0f ms", server_ready_s * 1e3,
                  std::max(0.0, timed.process_s - timed.transfer_s) * 1e3);
    row.bytes = timed.exit_code == 0 ? timed.bytes : -1;
    row.seconds = timed.exit_code == 0 ? timed.transfer_s : -1;
    row.startup = timed.exit_code == 0 ? startup : "";
    row.result = verdict;
    rows->push_back(std::move(row));
  }
  std::remove(source.c_str());
  std::remove(bulk.c_str());
  std::remove(received.c_str());
  return rc;
}

}  // namespace ferry::cli
