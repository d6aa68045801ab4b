// The dipc client's stream as an async producer (ferry's generic producer over the device stream
// the client returns), on every plane and body type: the batches arrive equal to the dataset's,
// the consumer's request(n) bounds what is read, and a cancel mid-stream ends the session so
// that the server frees every address it lent within a second.
#include <gtest/gtest.h>

#include <thread>

#include "ferry/device/async_stream.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "support/async_util.hpp"
#include "support/device_util.hpp"
#include "support/dipc_data.hpp"
#include "support/test_util.hpp"

namespace ferry::dipc {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

struct Plane {
  std::string transport;
  BodyType body;
  std::string name;
};

class AsyncDipc : public ::testing::TestWithParam<Plane> {
 protected:
  std::unique_ptr<Server> StartServer() {
    ServerOptions options;
    options.transport = GetParam().transport;
    options.body_type = GetParam().body;
    auto server = Server::Start(options);
    EXPECT_TRUE(server.ok()) << server.status().message();
    return server.ok() ? std::move(*server) : nullptr;
  }
  Result<UniqueDeviceArrayStream> Open(const Server& server, const std::string& ticket,
                                       ClientOptions options = {}) {
    options.buffer_lists = GetParam().body == BodyType::kBufferList;
    return ConnectStream(server.uri(ticket), ticket, options);
  }
};

using testing::AsyncRead;
using testing::StartAsyncRead;

TEST_P(AsyncDipc, EveryBatchArrivesAsRequested) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(6, 500));
  server->Add("t", data.dataset);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream client, Open(*server, "t"));
  AsyncRead r;
  ASSERT_OK(StartAsyncRead(&r, std::move(client), 2));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(r.reader.get()));
  EXPECT_EQ(got, data.expected);
  ASSERT_OK(r.producer->Wait(10s));
  const AsyncProducerCounters c = r.producer->counters();
  EXPECT_EQ(c.delivered, 6);
  EXPECT_LE(c.pulled, c.requested);
  r.reader.reset();
  EXPECT_TRUE(server->AwaitIdle(1s));
  const ServerStats st = server->stats();
  EXPECT_EQ(st.addresses_freed, st.addresses_lent);
}

TEST_P(AsyncDipc, ACancelMidStreamFreesTheServersLoansWithinASecond) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(40, 2000));
  server->Add("t", data.dataset);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream client, Open(*server, "t"));
  AsyncRead r;
  ASSERT_OK(StartAsyncRead(&r, std::move(client), 1));
  for (int b = 0; b < 2; ++b) {
    UniqueDeviceArray batch;
    ASSERT_EQ(r.reader->get_next(r.reader.get(), batch.get()), 0);
    ASSERT_TRUE(batch.valid());
    UniqueSchema schema;
    ASSERT_EQ(r.reader->get_schema(r.reader.get(), schema.get()), 0);
    EXPECT_EQ(Json::parse(testing::DeviceArrayToJson(schema.get(), batch.get())),
              data.expected[static_cast<size_t>(b)]);
  }
  r.reader.reset();  // the consumer leaves: the producer is cancelled and closes the client
  ASSERT_OK(r.producer->Wait(10s));
  EXPECT_TRUE(r.producer->counters().cancelled);
  EXPECT_LT(r.producer->counters().pulled, 40);
  EXPECT_TRUE(server->AwaitIdle(1s)) << "the session outlived the cancel by more than 1 s";
  const ServerStats st = server->stats();
  // The server takes back what it lent and the client never freed (the batches it had not read)
  // when the session ends.
  EXPECT_EQ(st.clients_active, 0);
  EXPECT_EQ(st.bytes_in_flight, 0);
}

TEST_P(AsyncDipc, AProducersBatchesAreServedAtTheReadersPace) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  ArrowAsyncDeviceStreamHandler handler{};
  AsyncHandlerOptions options;
  options.queue_size = 1;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Dataset> dataset, Dataset::FromAsync(&handler, options));
  server->Add("t", dataset);
  std::vector<Json> expected;
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(testing::IntSource(8, 500, -1, &expected),
                                                   ARROW_DEVICE_CPU, &handler));
  // No client yet: the producer hands over the one batch requested, and no more.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (producer->counters().delivered < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  AsyncProducerCounters c = producer->counters();
  EXPECT_EQ(c.requested, 1);
  EXPECT_EQ(c.delivered, 1);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream client, Open(*server, "t"));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(client.get()));
  EXPECT_EQ(got, expected);
  ASSERT_OK(producer->Wait(10s));
  c = producer->counters();
  EXPECT_EQ(c.delivered, 8);
  EXPECT_LE(c.pulled, c.requested);
  // Read once: a second client gets an error, not the batches again.
  Result<UniqueDeviceArrayStream> again = Open(*server, "t");
  if (again.ok()) {
    EXPECT_FALSE(testing::DrainToJson(again->get()).ok());
  }
}

// A paced client (window 0) under the async producer: the consumer's request(n) is the plane's
// flow control. The producer reads the client only as requested, and the client asks the server
// for each batch it reads, so by the server's own count it never sends more than was requested.
// Unpaced, the same consumer lets the server send everything ahead, which the count catches.
TEST_P(AsyncDipc, TheConsumersRequestsAreThePlanesWindow) {
  constexpr int64_t kBatches = 12;
  for (int64_t window : {int64_t{0}, int64_t{-1}}) {
    SCOPED_TRACE("window " + std::to_string(window));
    auto server = StartServer();
    ASSERT_TRUE(server);
    ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(kBatches, 200));
    server->Add("t", data.dataset);
    ClientOptions options;
    options.window = window;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream client, Open(*server, "t", options));
    AsyncRead r;
    ASSERT_OK(StartAsyncRead(&r, std::move(client), 2));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(r.reader.get(), 3));
    ASSERT_EQ(got.size(), 3u);
    // 2 requested ahead and one per batch read: 5. The server sends them all, and, paced, no
    // more, whatever the wait.
    auto sent = [&] { return server->stats().batches_sent; };
    const int64_t requested = r.producer->counters().requested;
    EXPECT_EQ(requested, 5);
    const int64_t bound = window < 0 ? kBatches : requested;
    EXPECT_TRUE(testing::Within(5s, [&] { return sent() >= bound; }));
    EXPECT_TRUE(testing::Throughout(100ms, [&] { return sent() == bound; })) << sent();
    ASSERT_OK_AND_ASSIGN(std::vector<Json> rest, testing::DrainToJson(r.reader.get()));
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(got, data.expected);
    ASSERT_OK(r.producer->Wait(10s));
    r.reader.reset();
    EXPECT_TRUE(server->AwaitIdle(5s));
    EXPECT_EQ(server->stats().addresses_freed, server->stats().addresses_lent);
  }
}

INSTANTIATE_TEST_SUITE_P(Planes, AsyncDipc,
                         ::testing::Values(Plane{"shm", BodyType::kBufferList, "ShmBufferList"},
                                           Plane{"shm", BodyType::kPacked, "ShmPacked"},
                                           Plane{"ucx", BodyType::kBufferList, "UcxBufferList"},
                                           Plane{"ucx", BodyType::kPacked, "UcxPacked"}),
                         [](const auto& plane) { return plane.param.name; });

}  // namespace
}  // namespace ferry::dipc
