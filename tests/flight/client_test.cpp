// ferry's Flight client: the streams it returns live on their own. A partitioned flight read in
// parallel (or one endpoint after the other) opens its later endpoints after the client that
// started the read is gone, and every batch still arrives.
#include "ferry/flight/client.hpp"

#include <nlohmann/json.hpp>

#include "ferry/flight/server.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight {
namespace {

using Json = nlohmann::json;

// `partitions` partitions of one batch of `rows` int64 values each, counting up from 0, and the
// rows each renders as.
struct Partitions {
  UniqueSchema schema;
  std::vector<std::vector<UniqueDeviceArray>> batches;
  std::vector<Json> expected;
};

Result<Partitions> MakePartitions(int partitions, int rows) {
  Partitions out;
  for (int p = 0; p < partitions; ++p) {
    Json values = Json::array();
    for (int i = 0; i < rows; ++i) values.push_back(Json{{"x", int64_t{p} * rows + i}});
    FERRY_ASSIGN_OR_RAISE(
        Array a,
        testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x")}), values.dump()));
    UniqueSchema s;
    out.batches.emplace_back();
    out.batches.back().push_back(testing::ToCpuDeviceArray(std::move(a), &s));
    out.schema = std::move(s);
    out.expected.push_back(std::move(values));
  }
  return out;
}

TEST(FlightClient, AStreamOutlivesTheClientThatMadeIt) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start());
  ASSERT_OK_AND_ASSIGN(Partitions data, MakePartitions(6, 500));
  ASSERT_OK(server->AddPartitioned("t", std::move(data.schema), std::move(data.batches)));
  for (int parallel : {1, 2}) {
    for (Via via : {Via::kShm, Via::kUcx, Via::kGrpc}) {
      SCOPED_TRACE("parallel " + std::to_string(parallel) + ", via " +
                   std::to_string(static_cast<int>(via)));
      if (via == Via::kUcx && server->plane("ucx") == nullptr) continue;  // built without UCX
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
      GetOptions options;
      options.parallel = parallel;
      options.via = via;
      ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream stream, client->Get("t", options));
      client.reset();  // endpoints 1..5 are opened from here on, without it
      ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(stream.get()));
      EXPECT_EQ(got, data.expected);
    }
  }
}

}  // namespace
}  // namespace ferry::flight
