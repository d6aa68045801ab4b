// The server's choice of body per client (src/dipc/session.cpp): a server of type-1 bodies lends
// its memory to every client whose reads of it are one-sided, and sends packed bodies to a
// same-host UCX client whose gets the loaded UCX would emulate (before 1.16).
#include <nlohmann/json.hpp>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"
#include "support/ucx_lending.hpp"

namespace ferry::dipc {
namespace {

using Json = nlohmann::json;

// Four batches of 10,000 int64 counting up from 0 (80,000 value bytes each), and their rows.
Result<std::pair<std::shared_ptr<Dataset>, std::vector<Json>>> Counting() {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  std::vector<Json> expected;
  for (int b = 0; b < 4; ++b) {
    Json values = Json::array();
    for (int i = 0; i < 10000; ++i) values.push_back(Json{{"x", int64_t{b} * 10000 + i}});
    FERRY_ASSIGN_OR_RAISE(
        Array a,
        testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x")}), values.dump()));
    UniqueSchema batch_schema;  // the same for every batch; the last one is kept
    batches.push_back(testing::ToCpuDeviceArray(std::move(a), &batch_schema));
    schema = std::move(batch_schema);
    expected.push_back(std::move(values));
  }
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Dataset> d,
                        Dataset::FromBatches(std::move(schema), std::move(batches)));
  return std::make_pair(std::move(d), std::move(expected));
}

class SessionBodies : public ::testing::TestWithParam<bool> {};  // kept or read afresh

TEST_P(SessionBodies, ASameHostUcxClientIsLentOnlyWhereItsReadsAreOneSided) {
  if (!transport::UcxAvailable()) {
    GTEST_SKIP() << "this build has no UCX transport (libucx-dev was not found)";
  }
  ServerOptions options;
  options.transport = "ucx";
  options.body_type = BodyType::kBufferList;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  ASSERT_OK_AND_ASSIGN(auto data, Counting());
  if (GetParam()) {
    ASSERT_OK(server->Keep("t", data.first));
  } else {
    server->Add("t", data.first);
  }
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("t"), "t"));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
  EXPECT_EQ(got, data.second);
  s.reset();
  const ServerStats stats = server->stats();
  EXPECT_EQ(stats.batches_sent, 4);
  if (testing::UcxLendsOnOneHost() || !testing::UcxSameHostPath()) {
    // UCX 1.16 and later read it by CMA; over TCP alone each get costs the server one send.
    EXPECT_GT(stats.addresses_lent, 0) << transport::LoadedUcx().loaded;
  } else {
    // Every body went packed: nothing lent, the 4 x 80,000 value bytes sent.
    EXPECT_EQ(stats.addresses_lent, 0) << transport::LoadedUcx().loaded;
    EXPECT_GE(stats.body_bytes_sent, 4 * 80000);
  }
  EXPECT_EQ(stats.sessions_failed, 0) << server->last_error();
}

INSTANTIATE_TEST_SUITE_P(KeptAndAfresh, SessionBodies, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "Kept" : "Afresh");
                         });

}  // namespace
}  // namespace ferry::dipc
