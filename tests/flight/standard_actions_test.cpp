// CancelFlightInfo on ferry's Flight server, sent by ferry's client with the standard body: a
// shared-memory session in the middle of its read is cut off and every buffer lent to it is taken
// back before the action answers; the ticket redeems nothing after. pyarrow.flight checks the
// gRPC plane's side in tests/flight/test_standard_actions.py.
#include <gtest/gtest.h>

#include "Flight.pb.h"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "flight/convert.hpp"
#include "support/device_util.hpp"
#include "support/dipc_data.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight {
namespace {

// `count` batches of `rows` int64 values served as flight `name`.
Status AddBig(Server* server, const std::string& name, int count, int64_t rows) {
  FERRY_ASSIGN_OR_RAISE(testing::IntArrays data,
                        testing::MakeIntArrays(count, rows, /*with_expected=*/false));
  return server->Add(name, std::move(data.schema), std::move(data.batches));
}

const PlaneMetrics* FindPlane(const ServerMetrics& m, const std::string& name) {
  for (const PlaneMetrics& p : m.planes) {
    if (p.plane == name) return &p;
  }
  return nullptr;
}

TEST(FlightCancel, CancelFlightInfoCutsOffAPlaneSessionAndTakesBackItsLoans) {
  ServerOptions options;
  options.planes = {"shm"};
  // A region of two 800 KB batches: with the client holding the first, the server cannot lend
  // the whole flight and its end before the cancel (with room for all 16 it sometimes had, and
  // the client then read its queued batches to the end with no error to see).
  options.plane.region_bytes = 2 << 20;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  ASSERT_OK(AddBig(server.get(), "t", 16, 100000));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
  ASSERT_OK_AND_ASSIGN(FlightInfo info, client->GetFlightInfo("t"));
  const std::string& ticket = info.endpoints[0].ticket;
  ASSERT_OK_AND_ASSIGN(dipc::Uri uri, dipc::Uri::Parse(info.endpoints[0].locations[0]));
  ASSERT_EQ(uri.scheme, "shm");
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream stream, dipc::ConnectStream(uri, ticket));
  UniqueSchema schema;
  ASSERT_OK(StreamGetSchema(stream.get(), schema.get()));
  UniqueDeviceArray first;
  ASSERT_OK(StreamGetNext(stream.get(), first.get()));
  ASSERT_TRUE(first.valid());
  EXPECT_EQ(first->array.length, 100000);

  const ServerMetrics held = server->metrics();  // Plane points into it
  const PlaneMetrics* before = FindPlane(held, "shm");
  ASSERT_NE(before, nullptr);
  ASSERT_EQ(before->sessions_active, 1);
  // The client holds the first batch: its buffers are lent and not yet freed.
  ASSERT_GT(before->lent_buffers - before->lent_buffers_freed, 0);

  ::arrow::flight::protocol::CancelFlightInfoRequest request;
  internal::ToProto(info, request.mutable_info());
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> result,
                       client->Action("CancelFlightInfo", request.SerializeAsString()));
  ASSERT_EQ(result.size(), 1u);
  ::arrow::flight::protocol::CancelFlightInfoResult cancelled;
  ASSERT_TRUE(cancelled.ParseFromString(result[0]));
  EXPECT_EQ(cancelled.status(), ::arrow::flight::protocol::CANCEL_STATUS_CANCELLED);

  // Within a second of the answer the session has ended and every buffer lent to it is back
  // (the cancel reclaims what was lent when it ran; a send already under way may lend one more,
  // which the session's end takes back).
  EXPECT_TRUE(server->plane("shm")->AwaitIdle(std::chrono::seconds(1)));
  const ServerMetrics after = server->metrics();
  const PlaneMetrics* shm = FindPlane(after, "shm");
  EXPECT_EQ(shm->lent_buffers, shm->lent_buffers_freed + shm->lent_buffers_reclaimed);
  EXPECT_GT(shm->lent_buffers_reclaimed, 0);
  // The client's read fails; the ticket redeems nothing on any location.
  Status rest;
  while (rest.ok()) {
    UniqueDeviceArray next;
    rest = StreamGetNext(stream.get(), next.get());
    if (rest.ok() && !next.valid()) break;
  }
  EXPECT_FALSE(rest.ok());
  first.reset();
  stream.reset();
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket", client->DoGet(ticket));
  EXPECT_FALSE(dipc::ConnectStream(uri, ticket).ok());
}

}  // namespace
}  // namespace ferry::flight
