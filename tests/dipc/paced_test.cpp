// A paced client (ClientOptions::window, ferry's credit extension), on every transport, body
// type and shape: the server sends no more than the window past what the client asked for, by
// its own batch count; the stream arrives whole and every loan comes back; a malformed credit
// fails the session by name; a URI without ferry's extensions refuses the window.
#include <thread>

#include "dipc/server_client.hpp"

namespace ferry::dipc {
namespace {

using namespace std::chrono_literals;
using namespace ferry::transport;
using Json = nlohmann::json;
using testing::IntBatches;
using testing::IntData;

// Whether `holds()` becomes true within `limit` (polled; the server's counters have no waiter).
template <typename F>
bool Within(std::chrono::milliseconds limit, F holds) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!holds()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Whether `holds()` stays true for all of `span` (a watch for what must not happen).
template <typename F>
bool Throughout(std::chrono::milliseconds span, F holds) {
  return !Within(span, [&] { return !holds(); });
}

TEST_P(ServerClient, APacedServerSendsNoMoreThanTheWindowPastWhatWasAsked) {
  constexpr int64_t kBatches = 12;
  constexpr int64_t kRead = 4;
  for (int64_t window : {int64_t{0}, int64_t{3}, int64_t{-1}}) {
    SCOPED_TRACE("window " + std::to_string(window));
    auto server = StartServer();
    ASSERT_TRUE(server);
    ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(kBatches, 200));
    server->Add("t", data.dataset);
    ClientOptions options;
    options.window = window;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t", options));
    UniqueSchema schema;
    ASSERT_EQ(s->get_schema(s.get(), schema.get()), 0);
    std::vector<Json> got;
    for (int64_t b = 0; b < kRead; ++b) {
      UniqueDeviceArray batch;
      ASSERT_EQ(s->get_next(s.get(), batch.get()), 0);
      ASSERT_TRUE(batch.valid());
      got.push_back(Json::parse(testing::DeviceArrayToJson(schema.get(), batch.get())));
    }
    // kRead asked for: the server goes exactly `window` further, and stops there. Unpaced, it
    // sends everything (the region holds it all), which is what the count would catch.
    const int64_t bound = window < 0 ? kBatches : std::min(kBatches, kRead + window);
    EXPECT_TRUE(Within(5s, [&] { return server->stats().batches_sent == bound; }))
        << server->stats().batches_sent << " sent";
    EXPECT_TRUE(Throughout(100ms, [&] { return server->stats().batches_sent <= bound; }))
        << server->stats().batches_sent << " sent, " << kRead << " asked for";
    ASSERT_OK_AND_ASSIGN(std::vector<Json> rest, testing::DrainToJson(s.get()));
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(got, data.expected);
    s.reset();
    ASSERT_TRUE(server->AwaitIdle(5s));
    const ServerStats st = server->stats();
    EXPECT_EQ(st.batches_sent, kBatches);
    EXPECT_EQ(st.addresses_freed, st.addresses_lent);
    EXPECT_EQ(st.sessions_failed, 0) << server->last_error();
  }
}

// From the protocol's side: a client that sends credit before want_data gets one batch per
// credit, and nothing while it has none.
TEST_P(ServerClient, EachCreditBuysOneBatch) {
  if (shape_.split) GTEST_SKIP() << "one URI";
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(3, 100));
  server->Add("t", data.dataset);
  const Uri uri = server->uri("t");
  const std::string address = uri.authority.empty() ? uri.path : uri.authority;
  ConnectOptions connect;
  connect.limits.timeout = 5s;
  connect.extensions = uri.ferry;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> raw, Connect(uri.scheme, address, connect));
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

TEST_P(ServerClient, AMalformedCreditFailsTheSessionByName) {
  if (shape_.split) GTEST_SKIP() << "one URI";
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(2, 100));
  server->Add("t", data.dataset);
  const Uri uri = server->uri("t");
  const std::string address = uri.authority.empty() ? uri.path : uri.authority;
  ConnectOptions connect;
  connect.limits.timeout = 5s;
  connect.extensions = uri.ferry;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> raw, Connect(uri.scheme, address, connect));
  const uint8_t three[] = {1, 2, 3};
  const ByteSpan bad{three, 3};
  ASSERT_OK(raw->SendTagged(kCreditTag, {&bad, 1}));
  const ByteSpan ticket{"t", 1};
  ASSERT_OK(raw->SendTagged(uri.want_data, {&ticket, 1}));
  while (raw->Receive(5s).ok()) {
  }
  raw.reset();
  ASSERT_TRUE(server->AwaitIdle(5s));
  EXPECT_EQ(server->stats().sessions_failed, 1);
  EXPECT_THAT(server->last_error(), ::testing::HasSubstr("bad credit: a credit body of 3 bytes"));
  EXPECT_EQ(server->stats().batches_sent, 0);
}

TEST_P(ServerClient, AWindowNeedsFerrysExtensions) {
  if (shape_.transport != "ucx" || shape_.split) GTEST_SKIP() << "ucx://, one URI";
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(1, 10));
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
