// The demo's last act: the table crosses from a `ferry serve` process to a `ferry get` process
// over shared memory and over UCX, and comes back identical, value by value.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
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

int Fail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "ferry demo: %s: %s\n", what.c_str(), st.message().c_str());
  return 1;
}

// A child process running this same executable, with its stdout on a pipe.
struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
};

Result<Child> Spawn(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return Status::IOError("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Child c;
  const int rc = posix_spawn(&c.pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return Status(rc, "could not start " + args[0] + " " + args[1]);
  }
  c.out = fdopen(fds[0], "r");
  return c;
}

std::string ReadLine(FILE* f) {
  std::string line;
  for (int ch = std::fgetc(f); ch != EOF && ch != '\n'; ch = std::fgetc(f)) {
    line.push_back(static_cast<char>(ch));
  }
  return line;
}

int Wait(const Child& c) {
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (c.out != nullptr) std::fclose(c.out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Write the table as an IPC stream in `batches` slices (the slices share the table's buffers),
// keeping each slice's JSON rendering in `expected`.
Status WriteTable(const Array& table, const std::string& path, int64_t batches,
                  std::vector<std::string>* expected) {
  FERRY_ASSIGN_OR_RAISE(ArrayView view, ArrayView::Make(table.schema()));
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<ipc::FileSink> sink, ipc::FileSink::Open(path));
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer,
                        ipc::StreamWriter::Open(sink.get(), table.schema()));
  const int64_t rows = table.array()->length;
  const int64_t step = std::max<int64_t>(1, (rows + batches - 1) / batches);
  for (int64_t at = 0; at < rows; at += step) {
    ArrowArray slice = *table.array();  // a borrowed view: the writer only reads it
    slice.offset += at;
    slice.length = std::min(step, rows - at);
    FERRY_RETURN_NOT_OK(writer.WriteBatch(&slice));
    FERRY_RETURN_NOT_OK(view.SetArray(&slice));
    FERRY_ASSIGN_OR_RAISE(std::string json, ArrayToJson(view));
    expected->push_back(std::move(json));
  }
  FERRY_RETURN_NOT_OK(writer.Close());
  return sink->Close();
}

// Each batch of an IPC stream file, rendered as JSON.
Result<std::vector<std::string>> ReadBatches(const std::string& path) {
  FERRY_ASSIGN_OR_RAISE(UniqueArrayStream stream, ipc::ReadPath(path));
  FERRY_ASSIGN_OR_RAISE(ArrayStreamReader reader, ArrayStreamReader::Open(stream.get()));
  std::vector<std::string> batches;
  while (true) {
    FERRY_ASSIGN_OR_RAISE(std::optional<Array> batch, reader.Next());
    if (!batch) break;
    FERRY_ASSIGN_OR_RAISE(std::string json, ArrayToJson(batch->view()));
    batches.push_back(std::move(json));
  }
  return batches;
}

}  // namespace

int ProcessTransfers(const Array& table) {
  std::printf("\nAcross processes (ferry serve -> ferry get, Dissociated IPC):\n");
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = std::string(tmp != nullptr ? tmp : "/tmp");
  const std::string stem = dir + "/ferry-demo-" + std::to_string(getpid());
  const std::string source = stem + "-table.arrows";
  const std::string received = stem + "-received.arrows";
  std::vector<std::string> want;
  Status st = WriteTable(table, source, 8, &want);
  if (!st.ok()) return Fail("writing " + source, st);

  struct Path {
    const char* transport;
    const char* body;
    const char* what;
  };
  const Path paths[] = {{"shm", "list", "shared memory, type-1 pairs (read in place)"},
                        {"shm", "packed", "Unix socket, type-0 packed bodies"},
                        {"ucx", "list", "UCX, type-1 pairs (RMA get)"},
                        {"ucx", "packed", "UCX, type-0 tagged bodies"}};
  int rc = 0;
  for (const Path& p : paths) {
    if (std::string(p.transport) == "ucx" && !transport::UcxAvailable()) {
      std::printf("  %-46s skipped: this build has no UCX\n", p.what);
      continue;
    }
    Result<Child> server =
        Spawn({"ferry", "serve", "--transport", p.transport, "--body", p.body, "demo=" + source});
    if (!server.ok()) return Fail("starting the server", server.status());
    const std::string line = ReadLine(server->out);
    const size_t space = line.find(' ');
    if (space == std::string::npos) {
      kill(server->pid, SIGKILL);
      Wait(*server);
      return Fail("starting the server", Status::IOError("it printed no URI"));
    }
    Result<Child> client = Spawn({"ferry", "get", line.substr(space + 1), "--ticket", "demo",
                                  "--no-progress", "--to", received});
    std::string summary;
    int client_rc = 1;
    if (client.ok()) {
      summary = ReadLine(client->out);
      client_rc = Wait(*client);
    }
    kill(server->pid, SIGTERM);
    Wait(*server);
    if (client_rc != 0) {
      std::fprintf(stderr, "ferry demo: the client over %s failed (exit %d)\n", p.what, client_rc);
      rc = 1;
      continue;
    }
    Result<std::vector<std::string>> got = ReadBatches(received);
    const bool same = got.ok() && *got == want;
    // The client's summary: "demo: N batches, R rows, B bytes in T s (X MB/s) on cpu, ...".
    const size_t colon = summary.find(": ");
    const size_t on = summary.find(" on ");
    std::printf("  %-46s %s: %s\n", p.what,
                colon != std::string::npos && on != std::string::npos
                    ? summary.substr(colon + 2, on - colon - 2).c_str()
                    : summary.c_str(),
                same ? "identical, value by value" : "DIFFERENT");
    if (!same) rc = 1;
  }
  std::remove(source.c_str());
  std::remove(received.c_str());
  return rc;
}

}  // namespace ferry::cli
