// The server's choice of body per client (src/dipc/session.cpp): a server of type-1 bodies lends
// its memory to every client whose reads of it are one-sided, and sends packed bodies to a ferry
// UCX client whose gets the loaded UCX would emulate (TCP lanes; one host before 1.16), unless
// that client asks for buffer lists. And a draining server's refusal of new requests, and the
// trace each session logs under (its client's hello's, else its ticket's).
#include "dipc/session.hpp"

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "ferry/core/log.hpp"
#include "ferry/core/trace.hpp"
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

// A session's log records carry the trace it serves: the client's traceparent from ferry's
// hello, else the one its ticket was issued with, with a span id of the session's own; and a
// client's bad traceparent is refused before anything is sent.

using namespace std::chrono_literals;

constexpr const char* kTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr const char* kParent = "00f067aa0ba902b7";
const std::string kTraceparent = std::string("00-") + kTraceId + "-" + kParent + "-01";

// What a server's sink took, thread-safe.
struct Records {
  std::mutex mutex;
  std::vector<LogRecord> all;
  LogSink sink() {
    return [this](const LogRecord& r) {
      std::lock_guard lock(mutex);
      all.push_back(r);
    };
  }
  std::vector<LogRecord> Of(const std::string& event) {
    std::lock_guard lock(mutex);
    std::vector<LogRecord> out;
    for (const LogRecord& r : all) {
      if (r.event == event) out.push_back(r);
    }
    return out;
  }
};

class SessionTrace : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "ucx" && !transport::UcxAvailable()) GTEST_SKIP() << "no UCX in this build";
    ServerOptions options;
    options.transport = GetParam();
    options.log_sink = records_.sink();
    ASSERT_OK_AND_ASSIGN(server_, Server::Start(options));
    ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(2, 10, false));
    server_->Add("d", data.dataset);
  }

  // Read `ticket` to its end and wait for its session to end.
  void Read(const std::string& ticket, const ClientOptions& options) {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s,
                         ConnectStream(server_->uri("d"), ticket, options));
    ASSERT_OK_AND_ASSIGN(std::vector<nlohmann::json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got.size(), 2u);
    s.reset();
    ASSERT_TRUE(server_->AwaitIdle(10s));
  }

  Records records_;
  std::unique_ptr<Server> server_;
};

TEST_P(SessionTrace, TheClientsTraceparentIsTheSessionsTrace) {
  ClientOptions options;
  options.traceparent = kTraceparent;
  Read("d", options);
  const std::vector<LogRecord> start = records_.Of("session_start");
  const std::vector<LogRecord> end = records_.Of("session_end");
  ASSERT_EQ(start.size(), 1u);
  ASSERT_EQ(end.size(), 1u);
  for (const LogRecord& r : {start[0], end[0]}) {
    EXPECT_EQ(r.trace_id, kTraceId);
    EXPECT_EQ(r.span_id.size(), 16u);
    EXPECT_NE(r.span_id, kParent);  // the session's own span
    EXPECT_EQ(r.plane, GetParam());
    EXPECT_EQ(r.session, GetParam() + "-1");
    EXPECT_FALSE(r.peer.empty());
  }
  EXPECT_EQ(start[0].level, LogLevel::kDebug);
  EXPECT_EQ(end[0].level, LogLevel::kInfo);
  EXPECT_EQ(start[0].span_id, end[0].span_id);
}

TEST_P(SessionTrace, WithoutOneTheTicketsTraceIsTheSessions) {
  ASSERT_OK_AND_ASSIGN(TraceContext issued, ParseTraceparent(kTraceparent));
  std::shared_ptr<TicketBook> book = server_->tickets();
  ASSERT_OK_AND_ASSIGN(std::string ticket, book->Issue("d", book->clock()->After(60s), issued));
  Read(ticket, {});
  const std::vector<LogRecord> end = records_.Of("session_end");
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].trace_id, kTraceId);
  EXPECT_NE(end[0].span_id, kParent);
}

TEST_P(SessionTrace, NoTraceAnywhereLeavesTheIdsOut) {
  Read("d", {});
  const std::vector<LogRecord> end = records_.Of("session_end");
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].trace_id, "");
  EXPECT_EQ(end[0].span_id, "");
}

TEST_P(SessionTrace, ABadTraceparentIsRefusedByTheClient) {
  ClientOptions options;
  options.traceparent = "00-" + std::string(32, '0') + "-" + kParent + "-01";
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "ClientOptions::traceparent",
                     ConnectStream(server_->uri("d"), "d", options).status());
}

INSTANTIATE_TEST_SUITE_P(Planes, SessionTrace, ::testing::Values("shm", "ucx"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// Without a structured sink the text log keeps its lines: session_start (kDebug) is not one.
TEST(SessionTraceLines, TheTextLogTakesTheMessagesOfInfoAndAbove) {
  std::mutex mutex;
  std::vector<std::string> lines;
  ServerOptions options;
  options.log = [&](const std::string& line) {
    std::lock_guard lock(mutex);
    lines.push_back(line);
  };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(1, 10, false));
  server->Add("d", data.dataset);
  ClientOptions client;
  client.traceparent = kTraceparent;
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("d"), "d", client));
    ASSERT_OK(testing::DrainToJson(s.get()).status());
  }
  ASSERT_TRUE(server->AwaitIdle(10s));
  std::lock_guard lock(mutex);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("served"), std::string::npos) << lines[0];
}

}  // namespace
}  // namespace ferry::dipc
