// The transfer benchmark's processes: the tables its servers build, the server role, and the
// children it spawns.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

#include "bench/dipc/transfer_bench.hpp"
#include "bench_scale.hpp"
#include "ferry/device/device.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/dipc/dataset.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"

extern char** environ;

namespace ferry::bench {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "transfer_bench: %s\n", what.c_str());
  std::exit(2);
}

void Check(const Status& st, const char* doing) {
  if (!st.ok()) Die(std::string(doing) + ": " + st.message());
}

std::string SourceDir() { return FERRY_SOURCE_DIR; }

bool Smoke() { return testing::SmokeRun(); }

const Shape& TheShape() {
  static const Shape full{1725000, 16, 1000, 20000, int64_t{64} << 20};
  static const Shape smoke{27000, 2, 1000, 200, int64_t{1} << 20};
  return Smoke() ? smoke : full;
}

namespace {

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
    for (int64_t i = 0; i < v.n_buffers(); ++i) total += v.buffer(i).size;
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
  const int64_t rows = small ? TheShape().small_rows : TheShape().big_rows;
  const int64_t count = small ? TheShape().small_batches : TheShape().big_batches;
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

}  // namespace

Result<int> ListenUnix(const std::string& name) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());  // abstract namespace
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 8) != 0) {
    return Status::FromErrno(errno, std::string("listening on @") + name);
  }
  return fd;
}

Result<int> ConnectUnix(const std::string& name) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    close(fd);
    return Status::FromErrno(err, std::string("connecting to @") + name);
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
    if (transport == "ucx") o.listen = "127.0.0.1:0";
    o.body_type = body[0] == '0' ? dipc::BodyType::kPacked : dipc::BodyType::kBufferList;
    server = Value(dipc::Server::Start(o), "starting the server");
    auto dataset =
        Value(dipc::Dataset::FromBatches(std::move(t.schema), std::move(t.batches)), "dataset");
    if (body == "1k" || body == "0k") {
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
    where = server->uri("table").ToString();
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

}  // namespace ferry::bench
