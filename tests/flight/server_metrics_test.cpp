// Server::metrics() in one process, against hand-computed figures: bytes and batches per plane and
// body type (an int64 column of 1,024 rows has an 8,192-byte body, which no alignment pads),
// sessions, lent buffers, tickets issued and expired by a manual clock, refusals, errors by code,
// and each RPC's latency histogram (with ServerOptions::metrics only).
#include <algorithm>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/metrics.hpp"
#include "ferry/flight/server.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kRows = 1024;
constexpr int64_t kBodyBytes = kRows * 8;

// `count` batches of kRows int64 values; their schema in *schema.
std::vector<UniqueDeviceArray> Batches(int count, UniqueSchema* schema) {
  *schema = testing::BatchField({Field::Make("l", "x")}).Export().ValueOrDie();
  std::vector<UniqueDeviceArray> out;
  for (int b = 0; b < count; ++b) {
    std::unique_ptr<ArrayBuilder> builder = ArrayBuilder::Make(schema->get()).ValueOrDie();
    for (int64_t i = 0; i < kRows; ++i) {
      EXPECT_OK(builder->child(0)->AppendInt(b * kRows + i));
      EXPECT_OK(builder->FinishElement());
    }
    UniqueArray a = builder->Finish().ValueOrDie();
    UniqueDeviceArray d;
    a.move_to(&d->array);
    d->device_type = ARROW_DEVICE_CPU;
    d->device_id = -1;
    out.push_back(std::move(d));
  }
  return out;
}

Status Drain(ArrowDeviceArrayStream* s) {
  UniqueSchema schema;
  FERRY_RETURN_NOT_OK(StreamGetSchema(s, schema.get()));
  while (true) {
    UniqueDeviceArray a;
    FERRY_RETURN_NOT_OK(StreamGetNext(s, a.get()));
    if (!a.valid()) return Status::OK();
  }
}

const PlaneMetrics& Plane(const ServerMetrics& m, const std::string& name) {
  auto it = std::find_if(m.planes.begin(), m.planes.end(),
                         [&](const PlaneMetrics& p) { return p.plane == name; });
  EXPECT_NE(it, m.planes.end()) << name;
  return *it;
}

const SentMetrics& Sent(const PlaneMetrics& p, const std::string& body_type) {
  auto it = std::find_if(p.sent.begin(), p.sent.end(),
                         [&](const SentMetrics& s) { return s.body_type == body_type; });
  EXPECT_NE(it, p.sent.end()) << body_type;
  return *it;
}

const RpcMetrics* Rpc(const ServerMetrics& m, const std::string& name) {
  for (const RpcMetrics& r : m.rpcs) {
    if (r.rpc == name) return &r;
  }
  return nullptr;
}

std::string ShmLocation(const Endpoint& e) {
  for (const std::string& l : e.locations) {
    if (l.rfind("shm://", 0) == 0) return l;
  }
  return "";
}

TEST(ServerMetrics, PlanesTicketsErrorsAndRpcsAgainstHandCountedFigures) {
  auto clock = std::make_shared<ManualClock>();
  ServerOptions options;
  options.planes = {"shm"};
  options.ticket_ttl = 10s;
  options.clock = clock;
  options.metrics = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches = Batches(3, &schema);
  ASSERT_OK(server->Add("t", std::move(schema), std::move(batches)));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));

  ServerMetrics m = server->metrics();
  ASSERT_EQ(m.planes.size(), 2u);
  EXPECT_EQ(m.planes[0].plane, "grpc");
  EXPECT_EQ(m.planes[1].plane, "shm");
  EXPECT_EQ(m.tickets_issued, 0);
  EXPECT_TRUE(m.rpcs.empty());

  // One read over shared memory (buffer lists), one over DoGet.
  ASSERT_OK_AND_ASSIGN(FlightInfo first, client->GetFlightInfo("t"));
  ASSERT_OK_AND_ASSIGN(dipc::Uri shm, dipc::Uri::Parse(ShmLocation(first.endpoints[0])));
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s,
                         dipc::ConnectStream(shm, first.endpoints[0].ticket));
    ASSERT_OK(Drain(s.get()));
  }
  ASSERT_TRUE(server->plane("shm")->AwaitIdle(10s));
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, client->DoGet(first.endpoints[0].ticket));
    ASSERT_OK(Drain(s.get()));
  }
  ASSERT_OK_AND_ASSIGN(FlightInfo second, client->GetFlightInfo("t"));

  m = server->metrics();
  const PlaneMetrics& sp = Plane(m, "shm");
  EXPECT_EQ(Sent(sp, "list").bytes, 3 * kBodyBytes);
  EXPECT_EQ(Sent(sp, "list").batches, 3);
  EXPECT_EQ(Sent(sp, "packed").bytes, 0);
  EXPECT_EQ(sp.sessions_total, 1);
  EXPECT_EQ(sp.sessions_active, 0);
  EXPECT_GT(sp.lent_buffers, 0);
  EXPECT_EQ(sp.lent_buffers_freed + sp.lent_buffers_reclaimed, sp.lent_buffers);
  const PlaneMetrics& gp = Plane(m, "grpc");
  // FlightData bytes are DoGet's own count (stats()), which frames each body in protobuf.
  EXPECT_EQ(Sent(gp, "flight_data").bytes, server->stats().bytes_sent);
  EXPECT_GT(Sent(gp, "flight_data").bytes, 3 * kBodyBytes);
  EXPECT_EQ(Sent(gp, "flight_data").batches, 3);
  EXPECT_EQ(gp.sessions_total, 1);
  EXPECT_EQ(m.tickets_issued, 2);
  EXPECT_EQ(m.tickets_expired, 0);

  // Past the tickets' ttl both have expired, and a read with one is refused on each plane.
  clock->Advance(10s);
  EXPECT_EQ(server->metrics().tickets_expired, 2);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "expired ticket",
                     client->DoGet(second.endpoints[0].ticket));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "expired ticket",
                     dipc::ConnectStream(shm, second.endpoints[0].ticket));
  m = server->metrics();
  EXPECT_EQ(Plane(m, "grpc").tickets_refused, 1);
  EXPECT_EQ(Plane(m, "shm").tickets_refused, 1);
  EXPECT_EQ(Plane(m, "grpc").errors, (std::map<StatusCode, int64_t>{{StatusCode::kNotFound, 1}}));
  // A refusal is not a failed session.
  EXPECT_TRUE(Plane(m, "shm").errors.empty());

  // Two GetFlightInfo and two DoGet calls, each timed on the manual clock, which did not move
  // during any of them: every one lies in the first bucket.
  const RpcMetrics* info = Rpc(m, "GetFlightInfo");
  const RpcMetrics* get = Rpc(m, "DoGet");
  ASSERT_NE(info, nullptr);
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(Rpc(m, "DoPut"), nullptr);
  for (const RpcMetrics* r : {info, get}) {
    EXPECT_EQ(r->latency.count, 2) << r->rpc;
    EXPECT_EQ(r->latency.sum_seconds, 0) << r->rpc;
    ASSERT_EQ(r->latency.bounds, LatencyBounds());
    ASSERT_EQ(r->latency.counts.size(), LatencyBounds().size() + 1);
    EXPECT_EQ(r->latency.counts[0], 2) << r->rpc;
  }
}

TEST(ServerMetrics, PackedBodiesAndNoRpcTableWithoutMetrics) {
  ServerOptions options;
  options.planes = {"shm"};
  options.plane.body_type = dipc::BodyType::kPacked;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches = Batches(2, &schema);
  ASSERT_OK(server->Add("t", std::move(schema), std::move(batches)));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
  ASSERT_OK_AND_ASSIGN(FlightInfo info, client->GetFlightInfo("t"));
  ASSERT_OK_AND_ASSIGN(dipc::Uri shm, dipc::Uri::Parse(ShmLocation(info.endpoints[0])));
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s,
                         dipc::ConnectStream(shm, info.endpoints[0].ticket));
    ASSERT_OK(Drain(s.get()));
  }
  ASSERT_TRUE(server->plane("shm")->AwaitIdle(10s));
  const ServerMetrics m = server->metrics();
  const PlaneMetrics& sp = Plane(m, "shm");
  EXPECT_EQ(Sent(sp, "packed").bytes, 2 * kBodyBytes);
  EXPECT_EQ(Sent(sp, "packed").batches, 2);
  EXPECT_EQ(Sent(sp, "list").bytes, 0);
  EXPECT_EQ(sp.lent_buffers, 0);
  EXPECT_TRUE(m.rpcs.empty());
  EXPECT_TRUE(m.peers.empty());
}

}  // namespace
}  // namespace ferry::flight
