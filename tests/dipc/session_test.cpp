// The server's choice of body per client (src/dipc/session.cpp): a server of type-1 bodies lends
// its memory to every client whose reads of it are one-sided, and sends packed bodies to a ferry
// UCX client whose gets the loaded UCX would emulate (TCP lanes; one host before 1.16), unless
// that client asks for buffer lists. And a draining server's refusal of new requests.
#include "dipc/session.hpp"

#include <nlohmann/json.hpp>
#include <type_traits>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/device_util.hpp"
#include "support/dipc_data.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"
#include "support/ucx_lending.hpp"

namespace ferry::dipc {
namespace {

using Json = nlohmann::json;

// A session holds the sink its stream writer writes to: nothing outside it can hand it messages.
static_assert(!std::is_base_of_v<ipc::MessageSink, internal::Session>);
static_assert(!std::is_convertible_v<internal::Session*, ipc::MessageSink*>);

// Kept or read afresh; whether the client asks for buffer lists.
struct BodiesCase {
  bool kept;
  bool buffer_lists;
};

class SessionBodies : public ::testing::TestWithParam<BodiesCase> {};

TEST_P(SessionBodies, AUcxClientIsLentOnlyWhereItsReadsAreOneSidedOrItAsks) {
  if (!transport::UcxAvailable()) {
    GTEST_SKIP() << "this build has no UCX transport (libucx-dev was not found)";
  }
  ServerOptions options;
  options.transport = "ucx";
  options.body_type = BodyType::kBufferList;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(4, 10000));
  if (GetParam().kept) {
    ASSERT_OK(server->Keep("t", data.dataset));
  } else {
    server->Add("t", data.dataset);
  }
  ClientOptions client;
  client.buffer_lists = GetParam().buffer_lists;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("t"), "t", client));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
  EXPECT_EQ(got, data.expected);
  s.reset();
  const ServerStats stats = server->stats();
  EXPECT_EQ(stats.batches_sent, 4);
  // One-sided only on the same-host path of UCX 1.16 and later (CMA); over TCP lanes (UCX_TLS
  // without shared memory) every get would cost the server a copy and a send.
  if (GetParam().buffer_lists || (testing::UcxLendsOnOneHost() && testing::UcxSameHostPath())) {
    EXPECT_GT(stats.addresses_lent, 0) << transport::LoadedUcx().loaded;
  } else {
    // Every body went packed: nothing lent, the 4 x 80,000 value bytes sent.
    EXPECT_EQ(stats.addresses_lent, 0) << transport::LoadedUcx().loaded;
    EXPECT_GE(stats.body_bytes_sent, 4 * 80000);
  }
  EXPECT_EQ(stats.sessions_failed, 0) << server->last_error();
}

INSTANTIATE_TEST_SUITE_P(Cases, SessionBodies,
                         ::testing::Values(BodiesCase{true, false}, BodiesCase{false, false},
                                           BodiesCase{true, true}, BodiesCase{false, true}),
                         [](const ::testing::TestParamInfo<BodiesCase>& i) {
                           return std::string(i.param.kept ? "Kept" : "Afresh") +
                                  (i.param.buffer_lists ? "AskingForLists" : "");
                         });

// A draining server refuses every new request, its ticket known or not, with UNAVAILABLE and
// says why; the session in progress when the drain started is served to its end, and the server
// is idle by its clock once that session has ended.
class DrainingServer : public ::testing::TestWithParam<std::string> {};

TEST_P(DrainingServer, RefusesNewRequestsAndServesTheOneInProgress) {
  if (GetParam() == "ucx" && !transport::UcxAvailable()) {
    GTEST_SKIP() << "this build has no UCX transport (libucx-dev was not found)";
  }
  ServerOptions options;
  options.transport = GetParam();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(4, 10000));
  server->Add("t", data.dataset);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream before, ConnectStream(server->uri("t"), "t"));
  EXPECT_FALSE(server->draining());
  server->Drain();
  EXPECT_TRUE(server->draining());
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "the server is draining",
                     ConnectStream(server->uri("t"), "t"));
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "the server is draining",
                     ConnectStream(server->uri("t"), "no-such-ticket"));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(before.get()));
  EXPECT_EQ(got, data.expected);
  before.reset();
  EXPECT_TRUE(server->AwaitIdleUntil(Clock::Real()->After(std::chrono::seconds(10))));
  EXPECT_EQ(server->stats().tickets_refused, 2);
  EXPECT_EQ(server->stats().sessions_failed, 0) << server->last_error();
}

INSTANTIATE_TEST_SUITE_P(Transports, DrainingServer, ::testing::Values("shm", "ucx"));

}  // namespace
}  // namespace ferry::dipc
