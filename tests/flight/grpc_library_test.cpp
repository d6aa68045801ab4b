// gRPC's process-wide state outlives every ferry server and client. gRPC tears it down when its
// last server or channel goes, joining its executor threads, and that join waited out a poll of
// up to 10 s: a server's Stop that takes 50 ms took 15 s, one stop in ten on a loaded host
// (src/flight/grpc_library.hpp). Held, no Stop or close runs that teardown.
#include "flight/grpc_library.hpp"

#include <grpc/grpc.h>
#include <gtest/gtest.h>

#include "ferry/flight/client.hpp"
#include "ferry/flight/server.hpp"
#include "support/test_util.hpp"

namespace ferry::flight {
namespace {

TEST(GrpcLibrary, OutlivesTheServersAndClientsThatUsedIt) {
  {
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.planes = {};
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(server->uri()));
    ASSERT_OK_AND_ASSIGN(std::vector<FlightInfo> flights, client->ListFlights());
    EXPECT_TRUE(flights.empty());
    client.reset();
    server->Stop();
  }
  // Every gRPC object of this process is gone (the suite's other tests closed theirs too): only
  // the library's own reference keeps gRPC up.
  EXPECT_TRUE(grpc_is_initialized());
  internal::HoldGrpcLibrary();  // a second hold is the same one: nothing to give back
  EXPECT_TRUE(grpc_is_initialized());
}

}  // namespace
}  // namespace ferry::flight
