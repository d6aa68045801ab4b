// The Flight client's stream as an async producer (ferry's generic producer over the device
// stream the client returns): a partitioned flight read over several endpoints in parallel, on
// each plane, arrives whole and in order through ferry's handler, never read past what was
// requested; releasing the reader mid-stream cancels the read.
#include <nlohmann/json.hpp>

#include "ferry/device/async_stream.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"
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
    ArrowAsyncDeviceStreamHandler handler{};
    UniqueDeviceArrayStream reader;
    AsyncHandlerOptions handler_options;
    handler_options.queue_size = 2;
    ASSERT_OK(AsyncHandlerToStream(&handler, reader.get(), handler_options));
    ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(std::move(stream), &handler));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(reader.get()));
    EXPECT_EQ(got, expected);
    ASSERT_OK(producer->Wait(10s));
    const AsyncProducerCounters c = producer->counters();
    EXPECT_EQ(c.delivered, 6);
    EXPECT_LE(c.pulled, c.requested);
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
  ArrowAsyncDeviceStreamHandler handler{};
  UniqueDeviceArrayStream reader;
  AsyncHandlerOptions handler_options;
  handler_options.queue_size = 1;
  ASSERT_OK(AsyncHandlerToStream(&handler, reader.get(), handler_options));
  ASSERT_OK_AND_ASSIGN(auto producer, ProduceAsync(std::move(stream), &handler));
  UniqueDeviceArray first;
  ASSERT_EQ(reader->get_next(reader.get(), first.get()), 0);
  ASSERT_TRUE(first.valid());
  reader.reset();
  ASSERT_OK(producer->Wait(10s));
  EXPECT_TRUE(producer->counters().cancelled);
  EXPECT_LE(producer->counters().pulled, 2);  // the batch read and the one requested after it
}

}  // namespace
}  // namespace ferry::flight
