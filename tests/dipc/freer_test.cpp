// free_data between a server and its clients, on every transport and body type: what a client
// was lent comes back, an unknown address is logged and ignored, a malformed message fails the
// session, and a batch fetched ahead is freed when the stream is left (the Freer's duties).
#include <mutex>
#include <thread>

#include "dipc/server_client.hpp"
#include "ferry/core/stream_adapter.hpp"

namespace ferry::dipc {
namespace {

using namespace std::chrono_literals;
using namespace ferry::transport;
using Json = nlohmann::json;
using testing::IntBatches;
using testing::IntData;

// An address in free_data that the client does not hold is logged and ignored (the protocol's
// server "logs unknown addresses"); the session and every other client go on.
TEST_P(ServerClient, AnUnknownAddressInFreeDataIsLoggedAndIgnored) {
  if (shape_.body != BodyType::kBufferList || shape_.split) GTEST_SKIP() << "type 1, one URI";
  std::mutex log_mutex;
  std::condition_variable logged;
  std::vector<std::string> log;
  ServerOptions options;
  options.log = [&](const std::string& line) {
    {
      std::lock_guard lock(log_mutex);
      log.push_back(line);
    }
    logged.notify_all();
  };
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(1, 100));
  server->Add("t", data.dataset);
  const Json& expected = data.expected[0];
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream good, Open(*server, "t"));
  UniqueSchema good_schema;
  ASSERT_EQ(good->get_schema(good.get(), good_schema.get()), 0);
  UniqueDeviceArray held;
  ASSERT_EQ(good->get_next(good.get(), held.get()), 0);

  // A rogue client, written from the protocol: want_data, the schema, then a bogus free.
  const Uri uri = server->uri("t");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> rogue, ConnectRaw(uri));
  const std::string ticket = "t";
  const ByteSpan t{ticket.data(), 1};
  ASSERT_OK(rogue->SendTagged(uri.want_data, {&t, 1}));
  ASSERT_OK(rogue->Receive(5s).status());  // the schema
  const uint64_t bogus[] = {0xdead0000};
  const std::vector<uint8_t> body = EncodeFreeData(bogus);
  const ByteSpan piece{body.data(), static_cast<int64_t>(body.size())};
  ASSERT_OK(rogue->SendTagged(*uri.free_data, {&piece, 1}));
  {
    // The session logs the address once it has counted it.
    std::unique_lock lock(log_mutex);
    ASSERT_TRUE(logged.wait_for(lock, 5s, [&] {
      return std::any_of(log.begin(), log.end(), [](const std::string& line) {
        return line.find("free_data names address") != std::string::npos;
      });
    }));
    EXPECT_THAT(log.back(), ::testing::HasSubstr("address 0x00000000dead0000"));
  }
  EXPECT_EQ(server->stats().unknown_frees, 1);
  EXPECT_EQ(server->stats().sessions_failed, 0) << server->last_error();
  // The rogue's stream goes on: its batch arrives.
  ASSERT_OK(rogue->Receive(5s).status());
  rogue.reset();
  // The good client's batch is untouched and still held by the server for it.
  EXPECT_EQ(Json::parse(testing::DeviceArrayToJson(good_schema.get(), held.get())), expected);
  ASSERT_OK_AND_ASSIGN(std::vector<Json> rest, testing::DrainToJson(good.get()));
  EXPECT_TRUE(rest.empty());
}

// A free_data that is not a list of addresses fails the session, naming what it was doing:
// noticed on the session's free_data thread while its serving thread goes on with the stream.
TEST_P(ServerClient, AMalformedFreeDataFailsTheSession) {
  if (shape_.split) GTEST_SKIP() << "one URI";
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(4, 100));
  server->Add("t", data.dataset);
  const Uri uri = server->uri("t");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> rogue, ConnectRaw(uri));
  const ByteSpan ticket{"t", 1};
  ASSERT_OK(rogue->SendTagged(uri.want_data, {&ticket, 1}));
  ASSERT_OK(rogue->Receive(5s).status());  // the schema
  const uint8_t three[] = {1, 2, 3};
  const ByteSpan bad{three, 3};
  ASSERT_OK(rogue->SendTagged(*uri.free_data, {&bad, 1}));
  // The server streams to the end and closes; every receive is bounded.
  while (rogue->Receive(5s).ok()) {
  }
  rogue.reset();
  ASSERT_TRUE(server->AwaitIdle(5s));
  EXPECT_EQ(server->stats().sessions_failed, 1);
  EXPECT_THAT(server->last_error(), ::testing::HasSubstr("bad free_data"));
}

// The protocol's accounting: every distinct address lent in a type-1 body is freed by the
// client, and the server counts them.
TEST_P(ServerClient, EveryLentAddressIsFreed) {
  if (shape_.body != BodyType::kBufferList) GTEST_SKIP() << "type 1 only";
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(5, 300));
  server->Add("t", data.dataset);
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t"));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, data.expected);
  }
  EXPECT_TRUE(server->AwaitIdle(5s));
  const ServerStats st = server->stats();
  EXPECT_GT(st.addresses_lent, 0);
  EXPECT_EQ(st.addresses_freed, st.addresses_lent);
  EXPECT_EQ(st.unknown_frees, 0);
  EXPECT_EQ(st.bytes_in_flight, 0);
}

// With full validation a UCX client fetches batch N+1 while it validates batch N. A stream left
// after two batches has taken a third (its metadata and list were there); its addresses go back
// to the server with the others'. Shared memory maps in place and takes nothing ahead.
TEST_P(ServerClient, ABatchFetchedAheadIsFreedWhenTheStreamIsLeft) {
  if (shape_.body != BodyType::kBufferList) GTEST_SKIP() << "type 1 only";
  auto clock = std::make_shared<ManualClock>();
  ServerOptions server_options;
  server_options.clock = clock;
  auto server = StartServer(server_options);
  ASSERT_TRUE(server);
  constexpr int kBatches = 6;
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(kBatches, 300));
  server->Add("t", data.dataset);
  ClientOptions options;
  options.read.validation = ValidationLevel::kFull;
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t", options));
    UniqueSchema schema;
    ASSERT_EQ(s->get_schema(s.get(), schema.get()), 0);
    UniqueDeviceArray first;
    ASSERT_EQ(s->get_next(s.get(), first.get()), 0);
    // Every batch sent and flushed: the session (each of the split shape's two) waits on the
    // clock for the client's end.
    ASSERT_TRUE(clock->AwaitWaiters(shape_.split ? 2 : 1, 5s));
    EXPECT_EQ(server->stats().batches_sent, kBatches);
    // Flushed means delivered to the client's transport; its progress thread then files the
    // messages in the connection's queue, which nothing outside the client shows. The pause is
    // for that hand-over between two threads of the client, not for a timeout.
    std::this_thread::sleep_for(200ms);
    UniqueDeviceArray second;
    ASSERT_EQ(s->get_next(s.get(), second.get()), 0);
    EXPECT_EQ(Json::parse(testing::DeviceArrayToJson(schema.get(), second.get())),
              data.expected[1]);
  }
  EXPECT_TRUE(server->AwaitIdle(5s));
  const ServerStats st = server->stats();
  ASSERT_EQ(st.addresses_lent % kBatches, 0);
  const int64_t per_batch = st.addresses_lent / kBatches;
  const int64_t taken = shape_.transport == "ucx" ? 3 : 2;
  EXPECT_EQ(st.addresses_freed, taken * per_batch);
  // The client closed holding the other batches' addresses: the server freed those itself.
  EXPECT_EQ(st.addresses_reclaimed, (kBatches - taken) * per_batch);
  EXPECT_EQ(st.unknown_frees, 0);
}

// A region that holds two batches: the client holds both while another thread asks for the
// third, and releases the first only once that read waits (the server waits for room; the
// client for the batch). The free must go while the read waits: batched with later frees, it
// would leave both sides waiting. The shared ManualClock tells when both wait; it never moves.
TEST_P(ServerClient, AReleaseWhileTheReaderWaitsIsSentAtOnce) {
  if (shape_.body != BodyType::kBufferList || shape_.split) GTEST_SKIP() << "type 1, one URI";
  if (shape_.transport != "shm") GTEST_SKIP() << "only shared memory lends bodies";
  auto clock = std::make_shared<ManualClock>();
  ServerOptions options;
  options.region_bytes = 80 << 10;
  options.clock = clock;
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(4, 4000));  // about 32 KiB each
  server->Add("t", data.dataset);
  ClientOptions client;
  client.clock = clock;
  client.spin = std::chrono::microseconds(0);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t", client));
  UniqueSchema schema;
  ASSERT_EQ(s->get_schema(s.get(), schema.get()), 0);
  std::vector<UniqueDeviceArray> got(5);
  for (int b = 0; b < 2; ++b) {
    ASSERT_EQ(s->get_next(s.get(), got[b].get()), 0) << s->get_last_error(s.get());
  }
  int rc = -1;
  std::thread reader([&] { rc = s->get_next(s.get(), got[2].get()); });
  const bool both_wait = clock->AwaitWaiters(2, std::chrono::milliseconds(10000));
  EXPECT_EQ(Json::parse(testing::DeviceArrayToJson(schema.get(), got[0].get())), data.expected[0]);
  got[0].reset();  // on this thread, while the reader waits
  reader.join();
  ASSERT_TRUE(both_wait);
  ASSERT_EQ(rc, 0) << s->get_last_error(s.get());
  got[1].reset();
  ASSERT_EQ(s->get_next(s.get(), got[3].get()), 0) << s->get_last_error(s.get());
  ASSERT_EQ(s->get_next(s.get(), got[4].get()), 0) << s->get_last_error(s.get());
  EXPECT_FALSE(got[4].valid());
  for (int b = 2; b < 4; ++b) {
    EXPECT_EQ(Json::parse(testing::DeviceArrayToJson(schema.get(), got[b].get())),
              data.expected[b]);
  }
  got.clear();
  s.reset();
  EXPECT_TRUE(server->AwaitIdle(5s));
  EXPECT_EQ(server->stats().sessions_failed, 0) << server->last_error();
}

}  // namespace
}  // namespace ferry::dipc
