// ferry's Flight client in a session (flight/client_session): it keeps the cookie its server set,
// sends it on every later call, DoGet's too, and its reads take the session's options where they
// leave the default. The server's own counters are the oracle: the body type each plane sent and
// the bytes DoGet wrote; pyarrow.flight sets the same options in test_standard_actions.py.
#include "flight/client_session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"
#include "support/device_util.hpp"
#include "support/dipc_data.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight {
namespace {

using internal::ClientSession;

TEST(ClientSession, ItsOptionsFillWhatAReadLeavesAtTheDefault) {
  ClientSession session;
  session.set_options({{"body_type", "1"}, {"parallelism", "3"}, {"target_device", "cpu"}});
  ASSERT_OK_AND_ASSIGN(GetOptions applied, session.Apply(GetOptions{}));
  EXPECT_TRUE(applied.buffer_lists);
  EXPECT_EQ(applied.parallel, 3);
  EXPECT_EQ(applied.device, CpuDevice());
  // What the read says wins.
  GetOptions mine;
  mine.parallel = 1;
  ASSERT_OK_AND_ASSIGN(Device * gpu_or_cpu, ParseDevice("cpu"));
  mine.device = gpu_or_cpu;
  ASSERT_OK_AND_ASSIGN(applied, session.Apply(mine));
  EXPECT_EQ(applied.parallel, 1);
  EXPECT_EQ(applied.device, gpu_or_cpu);
  session.set_options({{"body_type", "0"}});
  ASSERT_OK_AND_ASSIGN(applied, session.Apply(GetOptions{}));
  EXPECT_FALSE(applied.buffer_lists);
  EXPECT_EQ(applied.parallel, 0);
  session.set_options({{"target_device", "opencl:9"}});
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "the session's target_device \"opencl:9\"",
                     session.Apply(GetOptions{}));
}

// `count` batches of `rows` consecutive int64 values (they compress well) as flight `name`.
Status AddSeries(Server* server, const std::string& name, int count, int64_t rows) {
  FERRY_ASSIGN_OR_RAISE(testing::IntArrays data,
                        testing::MakeIntArrays(count, rows, /*with_expected=*/false));
  return server->Add(name, std::move(data.schema), std::move(data.batches));
}

// Batches and bytes plane `plane` sent with `body_type` so far (0 when none).
SentMetrics SentBy(const Server& server, const std::string& plane, const std::string& body_type) {
  for (const PlaneMetrics& p : server.metrics().planes) {
    if (p.plane != plane) continue;
    for (const SentMetrics& s : p.sent) {
      if (s.body_type == body_type) return s;
    }
  }
  return {};
}

// Read flight `path` to its end; returns the rows and the device the batches landed on.
std::pair<int64_t, ArrowDeviceType> ReadAll(Client* client, const std::string& path,
                                            GetOptions options = {}) {
  Result<UniqueDeviceArrayStream> stream = client->Get(path, options);
  EXPECT_TRUE(stream.ok()) << stream.status().message();
  if (!stream.ok()) return {-1, ARROW_DEVICE_CPU};
  int64_t rows = 0;
  ArrowDeviceType type = ARROW_DEVICE_CPU;
  while (true) {
    UniqueDeviceArray batch;
    Status st = StreamGetNext(stream->get(), batch.get());
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok() || !batch.valid()) break;
    rows += batch->array.length;
    type = batch->device_type;
  }
  return {rows, type};
}

TEST(FlightSessions, FerrysClientKeepsTheCookieAndItsReadsTakeTheSessionsOptions) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start());
  if (server->plane("ucx") == nullptr) GTEST_SKIP() << "built without UCX (libucx-dev)";
  ASSERT_OK(AddSeries(server.get(), "t", 4, 50000));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
  ASSERT_OK_AND_ASSIGN(SessionOptions none, client->GetSessionOptions());
  EXPECT_TRUE(none.empty());

  // Refused options are named; the rest are set and read back as the server normalised them.
  ASSERT_OK_AND_ASSIGN(auto refused,
                       client->SetSessionOptions({{"body_type", "1"}, {"colour", "blue"}}));
  EXPECT_EQ(refused, (std::map<std::string, std::string>{{"colour", "INVALID_NAME"}}));
  ASSERT_OK_AND_ASSIGN(SessionOptions held, client->GetSessionOptions());
  EXPECT_EQ(held, (SessionOptions{{"body_type", "1"}}));

  // body_type 1: the UCX plane lends buffer lists to this client, packed bodies to another.
  GetOptions ucx;
  ucx.via = Via::kUcx;
  const int64_t lists = SentBy(*server, "ucx", "list").batches;
  const int64_t packed = SentBy(*server, "ucx", "packed").batches;
  EXPECT_EQ(ReadAll(client.get(), "t", ucx).first, 200000);
  EXPECT_EQ(SentBy(*server, "ucx", "list").batches - lists, 4);
  EXPECT_EQ(SentBy(*server, "ucx", "packed").batches, packed);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> other, Client::Connect(server->uri()));
  EXPECT_EQ(ReadAll(other.get(), "t", ucx).first, 200000);
  EXPECT_EQ(SentBy(*server, "ucx", "packed").batches - packed, 4);

  // compression zstd: DoGet to this client writes far fewer bytes than to the other.
  ASSERT_OK(client->SetSessionOptions({{"compression", "zstd"}}).status());
  GetOptions grpc;
  grpc.via = Via::kGrpc;
  int64_t before = SentBy(*server, "grpc", "flight_data").bytes;
  EXPECT_EQ(ReadAll(other.get(), "t", grpc).first, 200000);
  const int64_t plain = SentBy(*server, "grpc", "flight_data").bytes - before;
  before = SentBy(*server, "grpc", "flight_data").bytes;
  EXPECT_EQ(ReadAll(client.get(), "t", grpc).first, 200000);
  const int64_t compressed = SentBy(*server, "grpc", "flight_data").bytes - before;
  EXPECT_GT(plain, 1600000);
  EXPECT_LT(compressed * 4, plain) << compressed << " of " << plain;

  // CloseSession: the server forgets it, and so does the client (no cookie it would refuse).
  ASSERT_OK(client->CloseSession());
  ASSERT_OK_AND_ASSIGN(held, client->GetSessionOptions());
  EXPECT_TRUE(held.empty());
  before = SentBy(*server, "grpc", "flight_data").bytes;
  EXPECT_EQ(ReadAll(client.get(), "t", grpc).first, 200000);
  EXPECT_EQ(SentBy(*server, "grpc", "flight_data").bytes - before, plain);
}

TEST(FlightSessions, TheSessionsTargetDeviceIsWhereBatchesLand) {
  FERRY_RESOLVE_OR_SKIP(gpu, (testing::DeviceCase{ARROW_DEVICE_CUDA, 0, "CUDA0"}));
  (void)gpu;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start());
  ASSERT_OK(AddSeries(server.get(), "t", 2, 1000));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
  ASSERT_OK(client->SetSessionOptions({{"target_device", "cuda:0"}}).status());
  for (Via via : {Via::kShm, Via::kGrpc}) {
    GetOptions options;
    options.via = via;
    const auto [rows, type] = ReadAll(client.get(), "t", options);
    EXPECT_EQ(rows, 2000);
    EXPECT_EQ(type, ARROW_DEVICE_CUDA);
  }
  // A read that names its device keeps it.
  GetOptions cpu;
  cpu.device = CpuDevice();
  EXPECT_EQ(ReadAll(client.get(), "t", cpu).second, ARROW_DEVICE_CPU);
}

}  // namespace
}  // namespace ferry::flight
