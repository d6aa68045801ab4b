// CUDA IPC bodies (Server::KeepOnDevice) across two processes: this suite's binary, run again with
// $FERRY_TEST_CUDA_IPC_SERVE set, is the server (a CUDA driver refuses to open a handle in the
// process that exported it); the test process is the client and reads the stand-in driver's own
// counters: batches land with no copy and no allocation, one handle is opened per connection and
// every one is closed once the arrays are released, and the data equals the JSON it was made from.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "support/cuda_util.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

extern char** environ;

namespace ferry::dipc {
namespace {

using Json = nlohmann::json;

constexpr const char* kServeVariable = "FERRY_TEST_CUDA_IPC_SERVE";
constexpr int kBatches = 3;
constexpr int kRows = 200;

// Batch b's rows: an int64 and a string column, written out here as the oracle.
Json Rows(int b) {
  Json rows = Json::array();
  for (int i = 0; i < kRows; ++i) {
    const int64_t x = int64_t{b} * kRows + i;
    rows.push_back(Json{{"x", x * 3}, {"s", "row " + std::to_string(x)}});
  }
  return rows;
}

Result<std::shared_ptr<Dataset>> MakeDataset() {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  for (int b = 0; b < kBatches; ++b) {
    FERRY_ASSIGN_OR_RAISE(
        Array a,
        testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s")}),
                               Rows(b).dump()));
    UniqueSchema batch_schema;
    batches.push_back(testing::ToCpuDeviceArray(std::move(a), &batch_schema));
    schema = std::move(batch_schema);
  }
  return Dataset::FromBatches(std::move(schema), std::move(batches));
}

// The server process: keeps the dataset on CUDA:0, prints its two URIs, serves until its
// standard input closes, then prints "lent N freed M failed K" and exits.
int Serve() {
  Result<Device*> gpu = ResolveDevice(ARROW_DEVICE_CUDA, 0);
  Result<std::shared_ptr<Dataset>> dataset = MakeDataset();
  if (!gpu.ok() || !dataset.ok()) return 3;
  Result<std::unique_ptr<Server>> server = Server::Start();
  if (!server.ok()) return 4;
  if (const Status st = (*server)->KeepOnDevice("d", *dataset, **gpu); !st.ok()) {
    std::printf("error %s\n", st.message().c_str());
    return 5;
  }
  std::printf("%s\n%s\n", (*server)->uri("d").ToString().c_str(),
              (*server)->uri().ToString().c_str());
  std::fflush(stdout);
  while (std::fgetc(stdin) != EOF) {
  }
  // The clients' last free_data may still be on its way to a session: wait for it (bounded).
  (void)(*server)->AwaitIdle(std::chrono::seconds(5));
  const ServerStats s = (*server)->stats();
  (*server)->Stop();
  std::printf("lent %lld freed %lld failed %lld\n", static_cast<long long>(s.addresses_lent),
              static_cast<long long>(s.addresses_freed), static_cast<long long>(s.sessions_failed));
  std::fflush(stdout);  // _exit follows
  return 0;
}

// Runs before main when this binary is the server.
[[maybe_unused]] const bool kServed = [] {
  if (std::getenv(kServeVariable) == nullptr) return false;
  std::fflush(stdout);
  _exit(Serve());
}();

// The server process, its standard input and output as pipes.
class ServerProcess {
 public:
  ServerProcess() {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return;
    self[n] = '\0';
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.push_back(std::string(kServeVariable) + "=1");
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char* argv[] = {self, nullptr};
    if (posix_spawn(&pid_, self, &actions, nullptr, argv, envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    to_ = fdopen(in[1], "w");
    from_ = fdopen(out[0], "r");
  }
  ~ServerProcess() {
    if (to_ != nullptr) fclose(to_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (from_ != nullptr) fclose(from_);
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  std::string ReadLine() {
    char line[4096];
    if (from_ == nullptr || std::fgets(line, sizeof(line), from_) == nullptr) return "<eof>";
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  // Close its input (it stops) and return its last line.
  std::string Finish() {
    fclose(to_);
    to_ = nullptr;
    std::string last = ReadLine();
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return last;
  }

 private:
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

#define START_SERVER_OR_SKIP(gpu, standin, server, uri, host_uri)                   \
  FERRY_RESOLVE_OR_SKIP(gpu, (testing::DeviceCase{ARROW_DEVICE_CUDA, 0, "CUDA0"})); \
  [[maybe_unused]] const testing::Standin* standin = testing::GetStandin();         \
  ServerProcess server;                                                             \
  const std::string uri##_text = server.ReadLine();                                 \
  ASSERT_EQ(uri##_text.rfind("shm://", 0), 0U) << uri##_text;                       \
  Result<Uri> uri##_parsed = Uri::Parse(uri##_text);                                \
  Result<Uri> host_uri##_parsed = Uri::Parse(server.ReadLine());                    \
  ASSERT_OK(uri##_parsed.status());                                                 \
  ASSERT_OK(host_uri##_parsed.status());                                            \
  const Uri& uri = *uri##_parsed;                                                   \
  [[maybe_unused]] const Uri& host_uri = *host_uri##_parsed

int64_t Counter(const FerryCudaStandinCounters& c, int64_t FerryCudaStandinCounters::*field) {
  return c.*field;
}

// The device memory holding a batch's first column (int64 "x").
const void* FirstColumn(const UniqueDeviceArray& batch) {
  return batch->array.n_children > 0 ? batch->array.children[0]->buffers[1] : nullptr;
}

TEST(CudaBodies, TwoConnectionsLandOnTheServersMemoryWithoutACopy) {
  START_SERVER_OR_SKIP(gpu, standin, server, uri, host_uri);
  ASSERT_TRUE(uri.remote_handle.has_value());
  EXPECT_EQ(uri.remote_handle->size(), 64U);
  ClientOptions options;
  options.device = gpu;
  std::vector<Json> got_a, got_b;
  {
    testing::StandinDelta delta;
    const int64_t open_before = standin != nullptr ? standin->ipc_open_handles() : 0;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream a, ConnectStream(uri, "d", options));
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream b, ConnectStream(uri, "d", options));
    if (standin != nullptr) {
      EXPECT_EQ(standin->ipc_open_handles() - open_before, 2);  // one per connection
    }
    UniqueSchema schema;
    ASSERT_EQ(a->get_schema(a.get(), schema.get()), 0);
    std::vector<UniqueDeviceArray> held;
    for (ArrowDeviceArrayStream* s : {a.get(), b.get()}) {
      while (true) {
        UniqueDeviceArray batch;
        ASSERT_EQ(s->get_next(s, batch.get()), 0) << s->get_last_error(s);
        if (!batch.valid()) break;
        EXPECT_EQ(batch->device_type, ARROW_DEVICE_CUDA);
        EXPECT_EQ(batch->sync_event, nullptr);
        held.push_back(std::move(batch));
      }
    }
    ASSERT_EQ(held.size(), 2U * kBatches);
    // Landing: nothing copied, nothing allocated, by the driver's own count.
    if (standin != nullptr) {
      const FerryCudaStandinCounters c = delta.Get();
      for (auto field :
           {&FerryCudaStandinCounters::copies_h2d, &FerryCudaStandinCounters::copies_d2h,
            &FerryCudaStandinCounters::copies_d2d, &FerryCudaStandinCounters::copies_h2h,
            &FerryCudaStandinCounters::allocations_device,
            &FerryCudaStandinCounters::allocations_pinned}) {
        EXPECT_EQ(Counter(c, field), 0);
      }
      EXPECT_EQ(c.ipc_opens, 2);
    }
    // The batches point into the server's memory, which the driver maps here.
    const void* column_a = FirstColumn(held.front());
    const void* column_b = FirstColumn(held.back());
    EXPECT_TRUE(testing::DriverMaps(column_a));
    EXPECT_TRUE(testing::DriverMaps(column_b));
    // Read back (this copies) and compare with the rows the server was given.
    for (size_t i = 0; i < held.size(); ++i) {
      Json rows = Json::parse(testing::DeviceArrayToJson(schema.get(), held[i].get()));
      (i < kBatches ? got_a : got_b).push_back(std::move(rows));
    }
    a.reset();
    b.reset();
    EXPECT_TRUE(testing::DriverMaps(column_a));  // the arrays still hold the mappings
    if (standin != nullptr) {
      EXPECT_EQ(standin->ipc_open_handles() - open_before, 2);
    }
    held.clear();
    EXPECT_FALSE(testing::DriverMaps(column_a));  // closed with the last array
    EXPECT_FALSE(testing::DriverMaps(column_b));
    if (standin != nullptr) {
      EXPECT_EQ(standin->ipc_open_handles(), open_before);
    }
  }
  for (int b = 0; b < kBatches; ++b) {
    EXPECT_EQ(got_a[static_cast<size_t>(b)], Rows(b));
    EXPECT_EQ(got_b[static_cast<size_t>(b)], Rows(b));
  }
  // Every lent offset came back in free_data.
  const std::string summary = server.Finish();
  EXPECT_EQ(summary.find("lent "), 0U) << summary;
  long long l = -1, f = -2, failed = -1;  // NOLINT(google-runtime-int)
  ASSERT_EQ(std::sscanf(summary.c_str(), "lent %lld freed %lld failed %lld", &l, &f, &failed), 3);
  EXPECT_GT(l, 0);
  EXPECT_EQ(l, f);
  EXPECT_EQ(failed, 0);
}

TEST(CudaBodies, ClientsWithoutCudaAreToldToUseTheHostUri) {
  START_SERVER_OR_SKIP(gpu, standin, server, uri, host_uri);
  // A CPU client is refused, naming the URI parameter.
  Result<UniqueDeviceArrayStream> cpu = ConnectStream(uri, "d", {});
  ASSERT_FALSE(cpu.ok());
  EXPECT_NE(cpu.status().message().find(kCudaIpcParameter), std::string::npos)
      << cpu.status().message();
  if (standin != nullptr) {
    EXPECT_EQ(standin->ipc_open_handles(), 0);
  }
  ClientOptions on_gpu;
  on_gpu.device = gpu;
  // A client that can use it, beside: the handle is what decides, not the connection.
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream g, ConnectStream(uri, "d", on_gpu));
  if (standin != nullptr) {
    EXPECT_EQ(standin->ipc_open_handles(), 1);
  }
  {
    UniqueDeviceArray first;
    ASSERT_EQ(g->get_next(g.get(), first.get()), 0) << g->get_last_error(g.get());
    ASSERT_TRUE(first.valid());
    const void* column = FirstColumn(first);
    EXPECT_TRUE(testing::DriverMaps(column));
    first.reset();
    g.reset();
    EXPECT_FALSE(testing::DriverMaps(column));
  }
  if (standin != nullptr) {
    EXPECT_EQ(standin->ipc_open_handles(), 0);
  }
  // The host URI serves the same rows from host memory.
  EXPECT_FALSE(host_uri.remote_handle.has_value());
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(host_uri, "d", {}));
  UniqueSchema schema;
  ASSERT_EQ(s->get_schema(s.get(), schema.get()), 0);
  for (int b = 0; b < kBatches; ++b) {
    UniqueDeviceArray batch;
    ASSERT_EQ(s->get_next(s.get(), batch.get()), 0) << s->get_last_error(s.get());
    ASSERT_TRUE(batch.valid());
    EXPECT_EQ(batch->device_type, ARROW_DEVICE_CPU);
    EXPECT_EQ(Json::parse(testing::DeviceArrayToJson(schema.get(), batch.get())), Rows(b));
  }
}

TEST(CudaBodies, ABadHandleIsAClearError) {
  START_SERVER_OR_SKIP(gpu, standin, server, uri, host_uri);
  ClientOptions options;
  options.device = gpu;
  Uri shorter = uri;
  shorter.remote_handle = uri.remote_handle->substr(0, 10);
  Result<UniqueDeviceArrayStream> r = ConnectStream(shorter, "d", options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("has 10 bytes"), std::string::npos) << r.status().message();
  Uri foreign = uri;
  foreign.remote_handle = std::string(64, '\x5a');
  r = ConnectStream(foreign, "d", options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("opening the remote_handle"), std::string::npos)
      << r.status().message();
  if (standin != nullptr) {
    EXPECT_EQ(standin->ipc_open_handles(), 0);
  }
}

}  // namespace
}  // namespace ferry::dipc
