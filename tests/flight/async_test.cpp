// The Flight client's stream as an async producer (ferry's generic producer over the device
// stream the client returns): a partitioned flight read over several endpoints in parallel, on
// each plane, arrives whole and in order through ferry's handler, never read past what was
// requested; releasing the reader mid-stream cancels the read. And Flight as the consumer: a
// producer's batches served by Server::AddAsync and uploaded by Client::PutAsync, whole, or not
// at all when the producer fails in the middle.
#include <nlohmann/json.hpp>
#include <thread>

#include "ferry/device/async_stream.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"
#include "support/async_util.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

// `partitions` partitions of one batch of `rows` int64 values each, counting up from 0.
Status Serve(Server& server, int partitions, int rows, std::vector<Json>* expected) {
  UniqueSchema schema;
  std::vector<std::vector<UniqueDeviceArray>> batches;
  for (int p = 0; p < partitions; ++p) {
    Json values = Json::array();
    for (int i = 0; i < rows; ++i) values.push_back(Json{{"x", int64_t{p} * rows + i}});
    FERRY_ASSIGN_OR_RAISE(
        Array a,
        testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x")}), values.dump()));
    batches.emplace_back();
    UniqueSchema kept;  // the same for every batch; the last one is kept
    batches.back().push_back(testing::ToCpuDeviceArray(std::move(a), &kept));
    schema = std::move(kept);
    expected->push_back(std::move(values));
  }
  return server.AddPartitioned("t", std::move(schema), std::move(batches));
}

TEST(FlightAsync, ParallelEndpointsArriveWholeOnEveryPlane) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start());
  std::vector<Json> expected;
  ASSERT_OK(Serve(*server, 6, 200, &expected));
  for (Via via : {Via::kShm, Via::kUcx, Via::kGrpc}) {
    SCOPED_TRACE("via " + std::to_string(static_cast<int>(via)));
    if (via == Via::kUcx && server->plane("ucx") == nullptr) continue;  // built without UCX
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
    GetOptions options;
    options.parallel = 3;
    options.via = via;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream stream, client->Get("t", options));
    testing::AsyncRead r;
    ASSERT_OK(testing::StartAsyncRead(&r, std::move(stream), 2));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(r.reader.get()));
    EXPECT_EQ(got, expected);
    ASSERT_OK(r.producer->Wait(10s));
    const AsyncProducerCounters c = r.producer->counters();
    EXPECT_EQ(c.delivered, 6);
    EXPECT_LE(c.pulled, c.requested);
  }
}

// Paced (window 0), the consumer's request(n) reaches each endpoint's server: over shared
// memory and UCX, the servers together send no more batches than the consumer requested, by
// their own counts, while three endpoints are read at once.
TEST(FlightAsync, APacedReadSendsOnlyWhatWasRequested) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start());
  std::vector<Json> expected;
  ASSERT_OK(Serve(*server, 9, 100, &expected));
  for (const char* plane : {"shm", "ucx"}) {
    SCOPED_TRACE(plane);
    dipc::Server* dipc = server->plane(plane);
    if (dipc == nullptr) continue;  // built without UCX
    const int64_t before = dipc->stats().batches_sent;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
    GetOptions options;
    options.parallel = 3;
    options.via = std::string(plane) == "shm" ? Via::kShm : Via::kUcx;
    options.window = 0;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream stream, client->Get("t", options));
    testing::AsyncRead r;
    ASSERT_OK(testing::StartAsyncRead(&r, std::move(stream), 2));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(r.reader.get(), 3));
    ASSERT_EQ(got.size(), 3u);
    auto sent = [&] { return dipc->stats().batches_sent - before; };
    const int64_t requested = r.producer->counters().requested;  // 2 ahead, 1 per batch read
    EXPECT_TRUE(testing::Within(5s, [&] { return sent() >= requested; }));
    EXPECT_TRUE(testing::Throughout(100ms, [&] { return sent() == requested; })) << sent();
    ASSERT_OK_AND_ASSIGN(std::vector<Json> rest, testing::DrainToJson(r.reader.get()));
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(got, expected);
    ASSERT_OK(r.producer->Wait(10s));
    EXPECT_EQ(sent(), 9);
  }
}

TEST(FlightAsync, ReleasingTheReaderCancelsTheRead) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start());
  std::vector<Json> expected;
  ASSERT_OK(Serve(*server, 20, 200, &expected));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
  GetOptions options;
  options.parallel = 2;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream stream, client->Get("t", options));
  testing::AsyncRead r;
  ASSERT_OK(testing::StartAsyncRead(&r, std::move(stream), 1));
  UniqueDeviceArray first;
  ASSERT_EQ(r.reader->get_next(r.reader.get(), first.get()), 0);
  ASSERT_TRUE(first.valid());
  r.reader.reset();
  ASSERT_OK(r.producer->Wait(10s));
  EXPECT_TRUE(r.producer->counters().cancelled);
  EXPECT_LE(r.producer->counters().pulled, 2);  // the batch read and the one requested after it
}

std::vector<Json> Read(Client& client, const std::string& path) {
  Result<UniqueDeviceArrayStream> stream = client.Get(path);
  EXPECT_TRUE(stream.ok()) << stream.status().message();
  if (!stream.ok()) return {};
  Result<std::vector<Json>> got = testing::DrainToJson(stream->get());
  EXPECT_TRUE(got.ok()) << got.status().message();
  return got.ok() ? *got : std::vector<Json>{};
}

TEST(FlightAsync, AServerServesWhatAProducerPushed) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start());
  ArrowAsyncDeviceStreamHandler handler{};
  AsyncHandlerOptions options;
  options.queue_size = 2;
  ASSERT_OK_AND_ASSIGN(std::shared_future<Status> added, server->AddAsync("t", &handler, options));
  std::vector<Json> expected;
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(testing::IntSource(5, 100, -1, &expected),
                                                   ARROW_DEVICE_CPU, &handler));
  ASSERT_EQ(added.wait_for(10s), std::future_status::ready);
  ASSERT_OK(added.get());
  ASSERT_OK(producer->Wait(10s));
  EXPECT_EQ(producer->counters().delivered, 5);
  EXPECT_LE(producer->counters().pulled, producer->counters().requested);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
  EXPECT_EQ(Read(*client, "t"), expected);

  // A producer that fails in the middle: its error, and no flight.
  ArrowAsyncDeviceStreamHandler broken_handler{};
  ASSERT_OK_AND_ASSIGN(std::shared_future<Status> broken,
                       server->AddAsync("broken", &broken_handler, options));
  std::vector<Json> unused;
  ASSERT_OK_AND_ASSIGN(auto failing, ProduceAsync(testing::IntSource(5, 100, 3, &unused),
                                                  ARROW_DEVICE_CPU, &broken_handler));
  ASSERT_EQ(broken.wait_for(10s), std::future_status::ready);
  ASSERT_RAISES_WITH(StatusCode::kIOError, "the source broke at batch 3", broken.get());
  EXPECT_NE(broken.get().message().find("AddAsync [broken]"), std::string::npos);
  EXPECT_FALSE(failing->Wait(10s).ok());
  EXPECT_EQ(server->names(), (std::vector<std::string>{"t"}));
}

TEST(FlightAsync, AClientUploadsWhatAProducerPushesAsItArrives) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
  ArrowAsyncDeviceStreamHandler handler{};
  AsyncHandlerOptions options;
  options.queue_size = 1;
  ASSERT_OK_AND_ASSIGN(std::shared_future<Status> put, client->PutAsync("up", &handler, options));
  std::vector<Json> expected;
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(testing::IntSource(6, 300, -1, &expected),
                                                   ARROW_DEVICE_CPU, &handler));
  ASSERT_EQ(put.wait_for(10s), std::future_status::ready);
  ASSERT_OK(put.get());
  ASSERT_OK(producer->Wait(10s));
  EXPECT_EQ(producer->counters().delivered, 6);
  EXPECT_LE(producer->counters().pulled, producer->counters().requested);
  EXPECT_EQ(Read(*client, "up"), expected);

  ArrowAsyncDeviceStreamHandler broken_handler{};
  ASSERT_OK_AND_ASSIGN(std::shared_future<Status> broken,
                       client->PutAsync("broken", &broken_handler, options));
  std::vector<Json> unused;
  ASSERT_OK_AND_ASSIGN(auto failing, ProduceAsync(testing::IntSource(4, 300, 2, &unused),
                                                  ARROW_DEVICE_CPU, &broken_handler));
  ASSERT_EQ(broken.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(broken.get().ok());
  EXPECT_NE(broken.get().message().find("the source broke at batch 2"), std::string::npos)
      << broken.get().message();
  EXPECT_FALSE(failing->Wait(10s).ok());
  EXPECT_EQ(server->names(), (std::vector<std::string>{"up"}));
}

}  // namespace
}  // namespace ferry::flight
