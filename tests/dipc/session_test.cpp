// The server's choice of body per client (src/dipc/session.cpp): a server of type-1 bodies lends
// its memory to every client whose reads of it are one-sided, and sends packed bodies to a ferry
// UCX client whose gets the loaded UCX would emulate (TCP lanes; one host before 1.16), unless
// that client asks for buffer lists. And a draining server's refusal of new requests, and the
// trace each session logs under (its client's hello's, else its ticket's). And a paced client
// (ClientOptions::window, ferry's credit message), on every transport, body type and shape: the
// server sends no more than the window past what the client asked for, by its own batch count;
// the stream arrives whole and every loan comes back; a malformed credit fails the session by
// name; a URI without ferry's extensions refuses the window.
#include "dipc/session.hpp"

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "dipc/server_client.hpp"
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

// ---- Pacing ----------------------------------------------------------------------------------

// The rest of a paced read: every batch arrives, in order, and the session ends clean, having
// sent them all and had every lent address freed.
void FinishRead(Server& server, UniqueDeviceArrayStream s, std::vector<Json> got,
                const testing::IntData& data, int64_t batches) {
  ASSERT_OK_AND_ASSIGN(std::vector<Json> rest, testing::DrainToJson(s.get()));
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, data.expected);
  s.reset();
  ASSERT_TRUE(server.AwaitIdle(5s));
  const ServerStats st = server.stats();
  EXPECT_EQ(st.batches_sent, batches);
  EXPECT_EQ(st.addresses_freed, st.addresses_lent);
  EXPECT_EQ(st.sessions_failed, 0) << server.last_error();
}

TEST_P(ServerClient, APacedServerSendsNoMoreThanTheWindowPastWhatWasAsked) {
  constexpr int64_t kBatches = 12;
  constexpr int64_t kRead = 4;
  for (int64_t window : {int64_t{0}, int64_t{3}, int64_t{-1}}) {
    SCOPED_TRACE("window " + std::to_string(window));
    auto server = StartServer();
    ASSERT_TRUE(server);
    ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(kBatches, 200));
    server->Add("t", data.dataset);
    ClientOptions options;
    options.window = window;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t", options));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get(), kRead));
    ASSERT_EQ(static_cast<int64_t>(got.size()), kRead);
    // kRead asked for: the server goes exactly `window` further, and stops there. Unpaced, it
    // sends everything (the region holds it all), which is what the count would catch.
    const int64_t bound = window < 0 ? kBatches : std::min(kBatches, kRead + window);
    EXPECT_TRUE(testing::Within(5s, [&] { return server->stats().batches_sent == bound; }))
        << server->stats().batches_sent << " sent";
    EXPECT_TRUE(testing::Throughout(100ms, [&] { return server->stats().batches_sent <= bound; }))
        << server->stats().batches_sent << " sent, " << kRead << " asked for";
    FinishRead(*server, std::move(s), std::move(got), data, kBatches);
  }
}

// The default (window -1): over ucx:// with ferry's extensions the server sends at most
// kDefaultUcxWindow batches past those asked for, so that the client's UCX does not take a whole
// stream of small bodies off the wire ahead of its reader; over shm:// the shared region bounds
// what is in flight, and the server sends everything it can.
TEST_P(ServerClient, ByDefaultAUcxClientPacesItsServerAndAShmClientDoesNot) {
  constexpr int64_t kBatches = kDefaultUcxWindow + 40;
  constexpr int64_t kRead = 4;
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(kBatches, 10));
  server->Add("t", data.dataset);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t", ClientOptions{}));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get(), kRead));
  if (shape_.transport == "ucx") {
    // The window goes with the request; the reads' credits follow in steps of a quarter of it,
    // or when the client would wait. So the server sends at least the window, and never more
    // than the window past what was asked.
    EXPECT_TRUE(
        testing::Within(5s, [&] { return server->stats().batches_sent >= kDefaultUcxWindow; }))
        << server->stats().batches_sent << " sent";
    EXPECT_TRUE(testing::Throughout(
        200ms, [&] { return server->stats().batches_sent <= kRead + kDefaultUcxWindow; }))
        << server->stats().batches_sent << " sent, " << kRead << " asked for";
  } else {
    EXPECT_TRUE(testing::Within(5s, [&] { return server->stats().batches_sent == kBatches; }))
        << server->stats().batches_sent << " sent";
  }
  FinishRead(*server, std::move(s), std::move(got), data, kBatches);
}

// From the protocol's side: a client that sends credit before want_data gets one batch per
// credit, and nothing while it has none.
TEST_P(ServerClient, EachCreditBuysOneBatch) {
  if (shape_.split) GTEST_SKIP() << "one URI";
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(3, 100));
  server->Add("t", data.dataset);
  const Uri uri = server->uri("t");
  ASSERT_OK_AND_ASSIGN(auto raw, ConnectRaw(uri, uri.ferry));
  auto credit = [&](uint64_t n) {
    const std::array<uint8_t, 8> body = EncodeCredit(n);
    const ByteSpan piece{body.data(), 8};
    return raw->SendTagged(kCreditTag, {&piece, 1});
  };
  ASSERT_OK(credit(0));
  const ByteSpan ticket{"t", 1};
  ASSERT_OK(raw->SendTagged(uri.want_data, {&ticket, 1}));
  ASSERT_OK(raw->Receive(5s).status());  // the schema is free
  EXPECT_EQ(raw->Receive(200ms).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(server->stats().batches_sent, 0);
  ASSERT_OK(credit(1));
  ASSERT_OK_AND_ASSIGN(SharedBytes first, raw->Receive(5s));
  ASSERT_OK_AND_ASSIGN(MetadataMessage m, ParseMetadataMessage(first));
  EXPECT_EQ(m.type, MetadataType::kIpcMessage);
  EXPECT_EQ(raw->Receive(200ms).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(server->stats().batches_sent, 1);
  raw.reset();
  ASSERT_TRUE(server->AwaitIdle(5s));
}

// Before the request, or while the server waits for a credit: either way the session fails at
// once, by name, and the server hangs up (the client does not have to).
TEST_P(ServerClient, AMalformedCreditFailsTheSessionByName) {
  if (shape_.split) GTEST_SKIP() << "one URI";
  for (bool before_request : {true, false}) {
    SCOPED_TRACE(before_request ? "before the request" : "while the server waits for one");
    auto server = StartServer();
    ASSERT_TRUE(server);
    ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(2, 100));
    server->Add("t", data.dataset);
    const Uri uri = server->uri("t");
    ASSERT_OK_AND_ASSIGN(auto raw, ConnectRaw(uri, uri.ferry));
    const uint8_t three[] = {1, 2, 3};
    const ByteSpan bad{three, 3};
    const std::array<uint8_t, 8> none = EncodeCredit(0);
    const ByteSpan window{none.data(), 8};
    ASSERT_OK(raw->SendTagged(kCreditTag, {before_request ? &bad : &window, 1}));
    const ByteSpan ticket{"t", 1};
    ASSERT_OK(raw->SendTagged(uri.want_data, {&ticket, 1}));
    if (!before_request) {
      ASSERT_OK(raw->Receive(5s).status());  // the schema; then the server waits for a credit
      ASSERT_OK(raw->SendTagged(kCreditTag, {&bad, 1}));
    }
    Status last;
    do {
      last = raw->Receive(5s).status();
    } while (last.ok());
    EXPECT_NE(last.code(), StatusCode::kDeadlineExceeded) << "the server did not hang up";
    raw.reset();
    ASSERT_TRUE(server->AwaitIdle(5s));
    EXPECT_EQ(server->stats().sessions_failed, 1);
    EXPECT_THAT(server->last_error(), ::testing::HasSubstr("bad credit: a credit body of 3 bytes"));
    EXPECT_EQ(server->stats().batches_sent, 0);
  }
}

// A paced client that goes, or stops asking, while the server waits for its credit: the session
// ends at once when it goes, and at the server's timeout (on its clock) when it stops, by name.
TEST_P(ServerClient, APacedClientThatGoesOrStopsIsNotWaitedForBeyondTheTimeout) {
  if (shape_.split) GTEST_SKIP() << "one URI";
  for (bool stops : {false, true}) {
    SCOPED_TRACE(stops ? "stops" : "goes");
    auto clock = std::make_shared<ManualClock>();
    ServerOptions options;
    options.clock = clock;
    // What the server logged, and its counters: said with any failure below, to tell which
    // step stopped.
    auto lines = std::make_shared<std::vector<std::string>>();
    auto lines_mutex = std::make_shared<std::mutex>();
    options.log = [lines, lines_mutex](const std::string& line) {
      std::lock_guard lock(*lines_mutex);
      lines->push_back(line);
    };
    auto server = StartServer(options);
    ASSERT_TRUE(server);
    const auto state = [&] {
      const ServerStats st = server->stats();
      std::string out =
          "accepted " + std::to_string(st.clients_accepted) + ", active " +
          std::to_string(st.clients_active) + ", failed " + std::to_string(st.sessions_failed) +
          ", batches " + std::to_string(st.batches_sent) + "; clock waiters " +
          std::to_string(clock->waiters()) + "; last error: " + server->last_error() + "; log:";
      std::lock_guard lock(*lines_mutex);
      for (const std::string& line : *lines) out += "\n  " + line;
      return out;
    };
    ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(3, 100));
    server->Add("t", data.dataset);
    const Uri uri = server->uri("t");
    ASSERT_OK_AND_ASSIGN(auto raw, ConnectRaw(uri, uri.ferry));
    const std::array<uint8_t, 8> none = EncodeCredit(0);
    const ByteSpan window{none.data(), 8};
    ASSERT_OK(raw->SendTagged(kCreditTag, {&window, 1}));
    const ByteSpan ticket{"t", 1};
    ASSERT_OK(raw->SendTagged(uri.want_data, {&ticket, 1}));
    const Status schema = raw->Receive(5s).status();
    ASSERT_TRUE(schema.ok()) << "the schema: " << schema.message() << "; " << state();
    ASSERT_TRUE(clock->AwaitWaiters(1, 5s)) << "the session waits for a credit: " << state();
    if (stops) {
      clock->Advance(options.timeout + 1ms);
      ASSERT_TRUE(testing::Within(5s, [&] { return server->stats().sessions_failed == 1; }))
          << state();
      EXPECT_THAT(server->last_error(), ::testing::HasSubstr("asked for no batch for 30000 ms"));
    } else {
      raw.reset();
    }
    ASSERT_TRUE(testing::Within(5s, [&] { return server->stats().clients_active == 0; }))
        << state();
    EXPECT_EQ(server->stats().batches_sent, 0) << state();
  }
}

TEST_P(ServerClient, AWindowNeedsFerrysExtensions) {
  if (shape_.transport != "ucx" || shape_.split) GTEST_SKIP() << "ucx://, one URI";
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(testing::IntData data, testing::IntBatches(1, 10));
  server->Add("t", data.dataset);
  Uri bare = server->uri("t");
  bare.ferry = false;
  ClientOptions options;
  options.window = 1;
  options.buffer_lists = shape_.body == BodyType::kBufferList;
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "needs ferry=1",
                     ConnectStream(bare, "t", options));
  EXPECT_TRUE(server->AwaitIdle(5s));
}

}  // namespace
}  // namespace ferry::dipc
