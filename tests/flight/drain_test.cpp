// A Flight server's drain, in one process: once it starts, GetFlightInfo, DoGet and a new session
// on each plane are refused with UNAVAILABLE saying "draining", while a session in progress reads
// on to the end; Drain waits for it by the server's clock (a ManualClock here), returning true
// when it ended and false when the timeout passed first. tests/flight/test_drain.py drains a
// `ferry serve` process under load and reads health with gRPC's own client.
#include <future>
#include <thread>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kRows = 100000;  // 800 KB a batch: one at a time fits the 1 MiB region

// `count` batches of kRows int64 values each, and their schema.
void MakeData(int count, UniqueSchema* schema, std::vector<UniqueDeviceArray>* batches) {
  ASSERT_OK_AND_ASSIGN(*schema, testing::BatchField({Field::Make("l", "x")}).Export());
  for (int b = 0; b < count; ++b) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ArrayBuilder> builder, ArrayBuilder::Make(schema->get()));
    for (int64_t i = 0; i < kRows; ++i) {
      ASSERT_OK(builder->child(0)->AppendInt(b * kRows + i));
      ASSERT_OK(builder->FinishElement());
    }
    ASSERT_OK_AND_ASSIGN(UniqueArray a, builder->Finish());
    UniqueDeviceArray d;
    a.move_to(&d->array);
    d->device_type = ARROW_DEVICE_CPU;
    d->device_id = -1;
    batches->push_back(std::move(d));
  }
}

// Read `s` to its end: the sum of its values (each batch's are b * kRows + i).
int64_t SumRest(ArrowDeviceArrayStream* s, int64_t sum) {
  while (true) {
    UniqueDeviceArray a;
    EXPECT_OK(StreamGetNext(s, a.get()));
    if (!a.valid()) return sum;
    const auto* values = static_cast<const int64_t*>(a->array.children[0]->buffers[1]);
    for (int64_t i = 0; i < a->array.length; ++i) sum += values[i];
  }
}

class DrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.planes = {"shm"};
    if (transport::UcxAvailable()) options.planes.push_back("ucx");
    options.plane.region_bytes = 1 << 20;
    options.clock = clock_;
    ASSERT_OK_AND_ASSIGN(server_, Server::Start(options));
    UniqueSchema schema;
    std::vector<UniqueDeviceArray> batches;
    MakeData(kBatches, &schema, &batches);
    ASSERT_OK(server_->Add("t", std::move(schema), std::move(batches)));
    ASSERT_OK_AND_ASSIGN(client_, Client::Connect(server_->uri()));
    ASSERT_OK_AND_ASSIGN(info_, client_->GetFlightInfo("t"));
  }

  static constexpr int kBatches = 8;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
  FlightInfo info_;
};

int64_t ExpectedSum(int batches) {
  const int64_t n = batches * kRows;
  return n * (n - 1) / 2;
}

TEST_F(DrainTest, RefusesNewWorkWhileTheSessionInProgressReadsToItsEnd) {
  const Result<dipc::Uri> shm = dipc::Uri::Parse(info_.endpoints[0].locations[0]);
  ASSERT_OK(shm.status());
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream held,
                       dipc::ConnectStream(*shm, info_.endpoints[0].ticket));
  UniqueSchema schema;
  ASSERT_OK(StreamGetSchema(held.get(), schema.get()));
  UniqueDeviceArray first;
  ASSERT_OK(StreamGetNext(held.get(), first.get()));
  ASSERT_TRUE(first.valid());
  ASSERT_OK_AND_ASSIGN(FlightInfo late, client_->GetFlightInfo("t"));

  EXPECT_FALSE(server_->draining());
  server_->BeginDrain();
  EXPECT_TRUE(server_->draining());
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "draining", client_->GetFlightInfo("t"));
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "draining",
                     client_->DoGet(late.endpoints[0].ticket));
  for (const std::string& location : late.endpoints[0].locations) {
    if (location.rfind("shm://", 0) != 0 && location.rfind("ucx://", 0) != 0) continue;
    ASSERT_OK_AND_ASSIGN(dipc::Uri uri, dipc::Uri::Parse(location));
    ASSERT_RAISES_WITH(StatusCode::kUnavailable, "draining",
                       dipc::ConnectStream(uri, late.endpoints[0].ticket));
  }
  // The stats action still answers, saying so.
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> stats, client_->Action("stats"));
  EXPECT_NE(stats.at(0).find("\"health\":\"NOT_SERVING\""), std::string::npos) << stats[0];

  // The refused sessions wait on the clock too, until their clients hang up: once they have
  // ended, only the held session is left, and Drain's own wait is the next one.
  for (const char* transport : {"shm", "ucx"}) {
    const dipc::Server* plane = server_->plane(transport);
    if (plane == nullptr) continue;
    const int64_t held_here = std::string(transport) == "shm" ? 1 : 0;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (plane->stats().clients_active > held_here && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_EQ(plane->stats().clients_active, held_here) << transport;
  }
  // Drain waits for the held session; read to its end, it lets Drain return true.
  const int waiting = clock_->waiters();
  std::future<bool> drained = std::async(std::launch::async, [&] { return server_->Drain(60s); });
  ASSERT_TRUE(clock_->AwaitWaiters(waiting + 1, 10s));
  EXPECT_EQ(drained.wait_for(0ms), std::future_status::timeout);
  const auto* values = static_cast<const int64_t*>(first->array.children[0]->buffers[1]);
  int64_t sum = 0;
  for (int64_t i = 0; i < first->array.length; ++i) sum += values[i];
  first = UniqueDeviceArray();
  EXPECT_EQ(SumRest(held.get(), sum), ExpectedSum(kBatches));
  held = UniqueDeviceArrayStream();
  EXPECT_TRUE(drained.get());
}

TEST_F(DrainTest, TheTimeoutIsTimedByTheServersClock) {
  const Result<dipc::Uri> shm = dipc::Uri::Parse(info_.endpoints[0].locations[0]);
  ASSERT_OK(shm.status());
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream held,
                       dipc::ConnectStream(*shm, info_.endpoints[0].ticket));
  UniqueSchema schema;
  ASSERT_OK(StreamGetSchema(held.get(), schema.get()));
  UniqueDeviceArray first;
  ASSERT_OK(StreamGetNext(held.get(), first.get()));
  const int waiting = clock_->waiters();
  std::future<bool> drained = std::async(std::launch::async, [&] { return server_->Drain(5s); });
  ASSERT_TRUE(clock_->AwaitWaiters(waiting + 1, 10s));
  clock_->Advance(4900ms);
  EXPECT_EQ(drained.wait_for(0ms), std::future_status::timeout);
  // The wait counted above may have been a session's, the drain reading the clock just after
  // the advance: step the clock on until it ends, by at most 6 s of the clock in at most 1.2 s
  // of real time, which a drain timed by the real clock (5 s) would not meet.
  for (int i = 0; i < 60 && drained.wait_for(20ms) != std::future_status::ready; ++i) {
    clock_->Advance(100ms);
  }
  ASSERT_EQ(drained.wait_for(0ms), std::future_status::ready);
  EXPECT_FALSE(drained.get());  // the session still holds its batch
  server_->Stop();
}

}  // namespace
}  // namespace ferry::flight
