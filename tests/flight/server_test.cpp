// ferry's Flight server and client in one process: FlightInfo's fields and locations, reading
// over every location with the same ticket, uploads (stored whole or not at all), tokens,
// expiring and refreshed tickets, and drop. pyarrow.flight checks the same server from outside in
// tests/flight/test_*.py.
#include "ferry/flight/server.hpp"

#include <grpcpp/grpcpp.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "Flight.grpc.pb.h"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

struct Data {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  std::vector<Json> expected;
};

// `count` batches of an int64 and a string column.
Result<Data> MakeData(int count, int rows) {
  Data out;
  for (int b = 0; b < count; ++b) {
    Json values = Json::array();
    for (int i = 0; i < rows; ++i) {
      const int64_t v = int64_t{b} * rows + i;
      // Appended, not "v" + std::string: GCC 12's bogus -Wrestrict in Release (GCC PR 105651).
      values.push_back(Json{{"x", v}, {"s", std::string("v").append(std::to_string(v))}});
    }
    FERRY_ASSIGN_OR_RAISE(
        Array a,
        testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x"), Field::Make("u", "s")}),
                               values.dump()));
    UniqueSchema s;
    out.batches.push_back(testing::ToCpuDeviceArray(std::move(a), &s));
    out.schema = std::move(s);
    out.expected.push_back(std::move(values));
  }
  return out;
}

// `count` batches of `rows` int64 values each (8 MB per million rows), built without JSON; the
// expected rows are left out (too many to compare as JSON).
Result<Data> BigData(int count, int64_t rows) {
  Data out;
  FERRY_ASSIGN_OR_RAISE(out.schema, testing::BatchField({Field::Make("l", "x")}).Export());
  for (int b = 0; b < count; ++b) {
    FERRY_ASSIGN_OR_RAISE(std::unique_ptr<ArrayBuilder> builder,
                          ArrayBuilder::Make(out.schema.get()));
    for (int64_t i = 0; i < rows; ++i) {
      FERRY_RETURN_NOT_OK(builder->child(0)->AppendInt(b * rows + i));
      FERRY_RETURN_NOT_OK(builder->FinishElement());
    }
    FERRY_ASSIGN_OR_RAISE(UniqueArray a, builder->Finish());
    UniqueDeviceArray d;
    a.move_to(&d->array);
    d->device_type = ARROW_DEVICE_CPU;
    d->device_id = -1;
    out.batches.push_back(std::move(d));
  }
  return out;
}

// Reads a stream to its end and counts its rows, for streams whose contents a test does not check
// (rendering 8 M rows to JSON would cost the suite most of its time).
Result<int64_t> DrainRows(ArrowDeviceArrayStream* s) {
  UniqueSchema schema;
  FERRY_RETURN_NOT_OK(StreamGetSchema(s, schema.get()));
  int64_t rows = 0;
  while (true) {
    UniqueDeviceArray a;
    FERRY_RETURN_NOT_OK(StreamGetNext(s, a.get()));
    if (!a.valid()) return rows;
    rows += a->array.length;
  }
}

std::vector<std::string> Planes() {
  if (transport::UcxAvailable()) return {"shm", "ucx"};
  return {"shm"};
}

class FlightServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options = {}) {
    options.planes = Planes();
    auto server = Server::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
  }
  std::unique_ptr<Client> Connect(ClientOptions options = {}) {
    auto client = Client::Connect(server_->uri(), options);
    EXPECT_TRUE(client.ok()) << client.status().message();
    return client.ok() ? std::move(*client) : nullptr;
  }
  std::unique_ptr<Server> server_;
};

TEST_F(FlightServerTest, FlightInfoDescribesEveryPlane) {
  ServerOptions options;
  options.ticket_ttl = 120s;
  Start(options);
  ASSERT_OK_AND_ASSIGN(Data data, MakeData(3, 100));
  ASSERT_OK(server_->Add("numbers", std::move(data.schema), std::move(data.batches)));
  EXPECT_TRUE(std::regex_match(server_->uri(), std::regex(R"(grpc://127\.0\.0\.1:\d+)")))
      << server_->uri();
  EXPECT_GT(server_->port(), 0);
  auto client = Connect();
  ASSERT_OK_AND_ASSIGN(std::vector<FlightInfo> flights, client->ListFlights());
  ASSERT_EQ(flights.size(), 1u);
  ASSERT_OK_AND_ASSIGN(FlightInfo info, client->GetFlightInfo("numbers"));
  EXPECT_EQ(info.path, std::vector<std::string>{"numbers"});
  EXPECT_EQ(info.total_records, 300);
  EXPECT_GT(info.total_bytes, 300 * 8);
  EXPECT_TRUE(info.ordered);
  ASSERT_EQ(info.endpoints.size(), 1u);
  const Endpoint& e = info.endpoints[0];
  EXPECT_TRUE(std::regex_match(e.ticket, std::regex("[0-9a-f]{32}")));
  ASSERT_TRUE(e.expiration.has_value());
  const auto left = *e.expiration - std::chrono::system_clock::now();
  EXPECT_GT(left, 100s);
  EXPECT_LE(left, 121s);
  ASSERT_EQ(e.locations.size(), Planes().size() + 1);
  EXPECT_EQ(e.locations[0].rfind("shm://", 0), 0u) << e.locations[0];
  if (Planes().size() == 2) {
    EXPECT_TRUE(std::regex_search(
        e.locations[1],
        std::regex(R"(^ucx://127\.0\.0\.1:\d+\?want_data=\d+&free_data=\d+&remote_handle=)")))
        << e.locations[1];
  }
  EXPECT_EQ(e.locations.back(), kReuseConnection);
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, client->GetSchema("numbers"));
  EXPECT_EQ(schema->n_children, 2);
  ASSERT_OK_AND_ASSIGN(UniqueSchema from_info, info.DecodeSchema());
  EXPECT_EQ(std::string(from_info->children[1]->name), "s");
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no flight named \"nope\"",
                     client->GetFlightInfo("nope"));
}

TEST_F(FlightServerTest, OneTicketReadsOnEveryLocation) {
  Start();
  ASSERT_OK_AND_ASSIGN(Data data, MakeData(4, 250));
  std::vector<Json> expected = data.expected;
  ASSERT_OK(server_->Add("t", std::move(data.schema), std::move(data.batches)));
  auto client = Connect();
  ASSERT_OK_AND_ASSIGN(FlightInfo info, client->GetFlightInfo("t"));
  const std::string& ticket = info.endpoints[0].ticket;
  for (const std::string& l : info.endpoints[0].locations) {
    if (l == kReuseConnection) continue;
    ASSERT_OK_AND_ASSIGN(dipc::Uri uri, dipc::Uri::Parse(l));
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, dipc::ConnectStream(uri, ticket));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, expected) << l;
  }
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, client->DoGet(ticket));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
  EXPECT_EQ(got, expected);
  // Get follows the locations: shared memory first on this host; --via forces one.
  for (Via via : {Via::kAuto, Via::kShm, Via::kUcx, Via::kGrpc}) {
    if (via == Via::kUcx && Planes().size() < 2) continue;
    GetOptions options;
    options.via = via;
    std::string used;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream g, client->Get("t", options, &used));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> rows, testing::DrainToJson(g.get()));
    EXPECT_EQ(rows, expected);
    const char* prefix = via == Via::kUcx ? "ucx://" : via == Via::kGrpc ? "grpc://" : "shm://";
    EXPECT_EQ(used.rfind(prefix, 0), 0u) << used;
  }
}

TEST_F(FlightServerTest, GetFallsBackWhenAPlaneFails) {
  Start();
  ASSERT_OK_AND_ASSIGN(Data data, MakeData(1, 10));
  std::vector<Json> expected = data.expected;
  ASSERT_OK(server_->Add("t", std::move(data.schema), std::move(data.batches)));
  std::vector<std::string> log;
  ClientOptions copts;
  copts.timeout = 1s;
  copts.log = [&](const std::string& line) { log.push_back(line); };
  auto client = Connect(copts);
  ASSERT_OK_AND_ASSIGN(FlightInfo info, client->GetFlightInfo("t"));
  // A shared-memory location nobody listens on: the client logs it and goes on.
  info.endpoints[0].locations.insert(info.endpoints[0].locations.begin(),
                                     "shm://@ferry-nobody-listens?want_data=1&free_data=2");
  info.endpoints[0].locations.erase(info.endpoints[0].locations.begin() + 1);
  std::string used;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, client->GetInfo(info, {}, &used));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> rows, testing::DrainToJson(s.get()));
  EXPECT_EQ(rows, expected);
  EXPECT_NE(used.rfind("shm://", 0), 0u) << used;
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("failed, trying the next"), std::string::npos) << log[0];
  GetOptions only_shm;
  only_shm.via = Via::kShm;
  ASSERT_RAISES_WITH(StatusCode::kUnavailable,
                     "every location of the endpoint (server 127.0.0.1) failed",
                     client->GetInfo(info, only_shm));
}

// An ArrowArrayStream over CPU batches (moved out of `data` as they are read).
class BatchProducer final : public ArrayProducer {
 public:
  explicit BatchProducer(Data data) : data_(std::move(data)) {}
  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(data_.schema.get()));
    copy.move_to(out);
    return Status::OK();
  }
  Status GetNext(ArrowArray* out) override {
    if (next_ < data_.batches.size()) {
      UniqueArray a(&data_.batches[next_++]->array);
      a.move_to(out);
    }
    return Status::OK();
  }

 private:
  Data data_;
  size_t next_ = 0;
};

UniqueArrayStream StreamOf(Data data) {
  return ExportArrayStream(std::make_unique<BatchProducer>(std::move(data)));
}

TEST_F(FlightServerTest, PutStoresWholeUploadsOnly) {
  ServerOptions options;
  options.max_upload_bytes = 100000;
  Start(options);
  auto client = Connect();
  ASSERT_OK_AND_ASSIGN(Data small, MakeData(3, 100));
  std::vector<Json> expected = small.expected;
  UniqueArrayStream up = StreamOf(std::move(small));
  ASSERT_OK(client->Put("up", up.get()));
  EXPECT_EQ(server_->names(), std::vector<std::string>{"up"});
  for (Via via : {Via::kShm, Via::kGrpc}) {
    GetOptions g;
    g.via = via;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, client->Get("up", g));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> rows, testing::DrainToJson(s.get()));
    EXPECT_EQ(rows, expected);
  }
  // The same name again: refused, the first upload stays.
  ASSERT_OK_AND_ASSIGN(Data again, MakeData(1, 5));
  UniqueArrayStream up2 = StreamOf(std::move(again));
  ASSERT_RAISES_WITH(StatusCode::kAlreadyExists, "already served", client->Put("up", up2.get()));
  // Over the limit (about 300 kB): refused with the limit named, nothing stored.
  ASSERT_OK_AND_ASSIGN(Data big, MakeData(30, 1000));
  UniqueArrayStream up3 = StreamOf(std::move(big));
  ASSERT_RAISES_WITH(StatusCode::kResourceExhausted, "limit of 100000 bytes",
                     client->Put("big", up3.get()));
  EXPECT_EQ(server_->names(), std::vector<std::string>{"up"});
  EXPECT_EQ(server_->plane("shm")->readers("big"), 0);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no flight named \"big\"",
                     client->GetFlightInfo("big"));
  EXPECT_EQ(server_->stats().uploads_failed, 2);
  EXPECT_EQ(server_->stats().do_puts, 1);
}

TEST_F(FlightServerTest, TokenOnEveryCall) {
  ServerOptions options;
  options.token = "s3cret";
  Start(options);
  ASSERT_OK_AND_ASSIGN(Data data, MakeData(1, 10));
  ASSERT_OK(server_->Add("t", std::move(data.schema), std::move(data.batches)));
  auto anonymous = Connect();
  ASSERT_RAISES_WITH(StatusCode::kUnauthenticated, "UNAUTHENTICATED", anonymous->ListFlights());
  ASSERT_RAISES_WITH(StatusCode::kUnauthenticated, "no authorization header",
                     anonymous->GetFlightInfo("t"));
  ClientOptions wrong;
  wrong.token = "guess";
  ASSERT_RAISES_WITH(StatusCode::kUnauthenticated, "wrong authorization header",
                     Connect(wrong)->DoGet("t"));
  ClientOptions right;
  right.token = "s3cret";
  auto client = Connect(right);
  ASSERT_OK_AND_ASSIGN(FlightInfo info, client->GetFlightInfo("t"));
  // With a token, a flight's name is not a ticket, on any location.
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket", client->DoGet("t"));
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, client->DoGet(info.endpoints[0].ticket));
  EXPECT_OK(testing::DrainToJson(s.get()));
  EXPECT_GE(server_->stats().unauthenticated, 3);
}

TEST_F(FlightServerTest, ExpiredTicketsAreRefusedEverywhereAndRefreshExtends) {
  auto clock = std::make_shared<ManualClock>();
  ServerOptions options;
  options.token = "s3cret";
  options.ticket_ttl = 1s;
  options.clock = clock;
  Start(options);
  // The server, its book and every plane run on the one clock.
  EXPECT_EQ(server_->tickets()->clock(), clock);
  ASSERT_OK_AND_ASSIGN(Data data, MakeData(1, 10));
  ASSERT_OK(server_->Add("t", std::move(data.schema), std::move(data.batches)));
  ClientOptions right;
  right.token = "s3cret";
  auto client = Connect(right);
  const Clock::time_point issued = clock->Now();
  ASSERT_OK_AND_ASSIGN(FlightInfo brief, client->GetFlightInfo("t"));
  ASSERT_OK_AND_ASSIGN(FlightInfo kept, client->GetFlightInfo("t"));
  // The endpoint's expiration_time is the clock's expiry as wall time.
  ASSERT_TRUE(brief.endpoints[0].expiration.has_value());
  EXPECT_EQ(*brief.endpoints[0].expiration, clock->ToSystem(issued + 1s));
  clock->Advance(500ms);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> refreshed,
                       client->Action("refresh-ticket", kept.endpoints[0].ticket));
  ASSERT_EQ(refreshed.size(), 1u);
  EXPECT_TRUE(std::regex_match(refreshed[0], std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_EQ(refreshed[0], FormatRfc3339(clock->ToSystem(issued + 1500ms)));
  ASSERT_OK_AND_ASSIGN(Clock::time_point until,
                       server_->tickets()->Expiry(kept.endpoints[0].ticket));
  EXPECT_EQ(until, issued + 1500ms);
  // Up to its last tick the first ticket reads; from its expiry on it is refused everywhere.
  clock->Advance(500ms - Clock::duration(1));
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, client->DoGet(brief.endpoints[0].ticket));
    EXPECT_OK(testing::DrainToJson(s.get()));
  }
  clock->Advance(Clock::duration(1));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "expired ticket",
                     client->DoGet(brief.endpoints[0].ticket));
  for (const std::string& l : brief.endpoints[0].locations) {
    if (l == kReuseConnection) continue;
    ASSERT_OK_AND_ASSIGN(dipc::Uri uri, dipc::Uri::Parse(l));
    ASSERT_RAISES_WITH(StatusCode::kNotFound, "expired ticket",
                       dipc::ConnectStream(uri, brief.endpoints[0].ticket));
  }
  // Refreshed 500 ms in, the other ticket lives on past the first's expiry, until its own.
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, client->DoGet(kept.endpoints[0].ticket));
    EXPECT_OK(testing::DrainToJson(s.get()));
  }
  clock->Advance(500ms);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "expired ticket",
                     client->DoGet(kept.endpoints[0].ticket));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown or expired",
                     client->Action("refresh-ticket", brief.endpoints[0].ticket));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "unknown action \"nap\"", client->Action("nap"));
  ASSERT_OK_AND_ASSIGN(std::vector<ActionType> actions, client->ListActions());
  ASSERT_EQ(actions.size(), 10u);
  EXPECT_EQ(actions[0].type, "drop");
  EXPECT_EQ(actions[1].type, "refresh-ticket");
  EXPECT_EQ(actions[2].type, "append-partition");
  EXPECT_EQ(actions[3].type, "stats");
  EXPECT_EQ(actions[4].type, "drain");
  EXPECT_EQ(actions[5].type, "CancelFlightInfo");
  EXPECT_EQ(actions[6].type, "RenewFlightEndpoint");
  EXPECT_EQ(actions[9].type, "CloseSession");
}

// A flight dropped mid-read is gone for new calls at once (not listed, its tickets revoked), and
// the readers that hold it, over gRPC and over shm, read it to the end.
TEST_F(FlightServerTest, DropWhileReadLetsTheReadersFinishAndRevokesTickets) {
  Start();
  // 64 MB: more than gRPC's flow control lets the server send before the client reads.
  ASSERT_OK_AND_ASSIGN(Data data, BigData(8, 1000000));
  ASSERT_OK(server_->Add("t", std::move(data.schema), std::move(data.batches)));
  auto client = Connect();
  ASSERT_OK_AND_ASSIGN(FlightInfo info, client->GetFlightInfo("t"));
  ASSERT_OK_AND_ASSIGN(FlightInfo second, client->GetFlightInfo("t"));
  GetOptions shm;
  shm.via = Via::kShm;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream over_grpc, client->DoGet(info.endpoints[0].ticket));
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream over_shm, client->GetInfo(second, shm));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> dropped, client->Action("drop", "t"));
  EXPECT_EQ(dropped[0], "dropped t");
  EXPECT_TRUE(server_->names().empty());
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no flight named", client->Action("drop", "t"));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no flight named", client->GetFlightInfo("t"));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket",
                     client->DoGet(info.endpoints[0].ticket));
  ASSERT_OK_AND_ASSIGN(int64_t rows, DrainRows(over_grpc.get()));
  EXPECT_EQ(rows, 8000000);
  ASSERT_OK_AND_ASSIGN(rows, DrainRows(over_shm.get()));
  EXPECT_EQ(rows, 8000000);
}

TEST_F(FlightServerTest, AnotherServersTicketIsRefused) {
  ServerOptions options;
  options.token = "s3cret";
  Start(options);
  options.planes = Planes();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> other, Server::Start(options));
  for (Server* s : {server_.get(), other.get()}) {
    ASSERT_OK_AND_ASSIGN(Data data, MakeData(1, 10));
    ASSERT_OK(s->Add("t", std::move(data.schema), std::move(data.batches)));
  }
  ClientOptions right;
  right.token = "s3cret";
  auto client = Connect(right);
  ASSERT_OK_AND_ASSIGN(FlightInfo info, client->GetFlightInfo("t"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> other_client, Client::Connect(other->uri(), right));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket",
                     other_client->DoGet(info.endpoints[0].ticket));
  ASSERT_OK_AND_ASSIGN(FlightInfo other_info, other_client->GetFlightInfo("t"));
  for (const std::string& l : other_info.endpoints[0].locations) {
    if (l == kReuseConnection) continue;
    ASSERT_OK_AND_ASSIGN(dipc::Uri uri, dipc::Uri::Parse(l));
    ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket",
                       dipc::ConnectStream(uri, info.endpoints[0].ticket));
  }
}

TEST_F(FlightServerTest, KeptPlanesAndAFileDataset) {
  ServerOptions options;
  options.keep = true;
  Start(options);
  ASSERT_OK_AND_ASSIGN(Data data, MakeData(2, 50));
  std::vector<Json> expected = data.expected;
  std::vector<const ArrowArray*> arrays;
  for (const auto& b : data.batches) arrays.push_back(&b->array);
  ASSERT_OK_AND_ASSIGN(SharedBytes file, testing::WriteIpc(data.schema.get(), arrays, true));
  const std::string path = testing::ScratchPath("flight_kept.arrow");
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(file.data, 1, static_cast<size_t>(file.size), f),
              static_cast<size_t>(file.size));
    std::fclose(f);
  }
  ASSERT_OK(server_->AddPath("file", path));
  ASSERT_RAISES_WITH(StatusCode::kAlreadyExists, "already served", server_->AddPath("file", path));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "nope.arrow",
                     server_->AddPath("x", path + ".nope.arrow"));
  auto client = Connect();
  for (Via via : {Via::kShm, Via::kUcx, Via::kGrpc}) {
    if (via == Via::kUcx && Planes().size() < 2) continue;
    GetOptions g;
    g.via = via;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, client->Get("file", g));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> rows, testing::DrainToJson(s.get()));
    EXPECT_EQ(rows, expected);
  }
  std::remove(path.c_str());
}

// PollFlightInfo and DoExchange through the stub gRPC generates from Flight.proto (pyarrow has
// no PollFlightInfo).
TEST_F(FlightServerTest, PollFlightInfoCompletesAtOnceAndDoExchangeIsUnimplemented) {
  Start();
  ASSERT_OK_AND_ASSIGN(Data data, MakeData(2, 10));
  ASSERT_OK(server_->Add("t", std::move(data.schema), std::move(data.batches)));
  namespace pb = ::arrow::flight::protocol;
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                     grpc::InsecureChannelCredentials());
  std::unique_ptr<pb::FlightService::Stub> stub = pb::FlightService::NewStub(channel);
  pb::FlightDescriptor descriptor;
  descriptor.set_type(pb::FlightDescriptor::PATH);
  descriptor.add_path("t");
  {
    grpc::ClientContext context;
    pb::PollInfo poll;
    const grpc::Status st = stub->PollFlightInfo(&context, descriptor, &poll);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_FALSE(poll.has_flight_descriptor());  // complete: nothing to poll again
    EXPECT_DOUBLE_EQ(poll.progress(), 1.0);
    EXPECT_EQ(poll.info().total_records(), 20);
    EXPECT_EQ(poll.info().endpoint_size(), 1);
    EXPECT_EQ(poll.info().flight_descriptor().path(0), "t");
  }
  {
    grpc::ClientContext context;
    auto exchange = stub->DoExchange(&context);
    exchange->WritesDone();
    pb::FlightData message;
    EXPECT_FALSE(exchange->Read(&message));
    const grpc::Status st = exchange->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED);
    EXPECT_NE(st.error_message().find("does not implement DoExchange"), std::string::npos);
  }
  {
    grpc::ClientContext context;
    pb::PollInfo poll;
    descriptor.set_path(0, "nope");
    EXPECT_EQ(stub->PollFlightInfo(&context, descriptor, &poll).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
}

TEST(FlightClient, BadUrisAreNamed) {
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "is not a Flight URI",
                     Client::Connect("localhost:1234"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unknown Flight URI scheme \"http\"",
                     Client::Connect("http://x:1"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs HOST:PORT",
                     Client::Connect("grpc://hostonly"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> nobody, Client::Connect("grpc://127.0.0.1:1"));
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "UNAVAILABLE", nobody->ListFlights());
  EXPECT_TRUE(IsLocalHost("localhost"));
  EXPECT_TRUE(IsLocalHost("127.0.0.1"));
  EXPECT_TRUE(IsLocalHost("[::1]"));
  EXPECT_FALSE(IsLocalHost("192.0.2.1"));  // TEST-NET-1: never this host
}

}  // namespace
}  // namespace ferry::flight
