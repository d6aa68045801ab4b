// ferry's trace field: bytes a client gives ConnectOptions::trace reach the server's end before
// its first message (a trace frame over shared memory, a field of the hello over UCX), and
// nothing travels without them, or to a UCX server the client did not ask for extensions.
#include <gtest/gtest.h>

#include <string>

#include "ferry/transport/transport.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/test_util.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;

constexpr const char* kTrace =
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\ncongo=t61rcWkgMzE";

class TraceField : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "ucx" && !UcxAvailable()) GTEST_SKIP() << "this build has no UCX";
  }

  // The server's end of a connection made with `options`, once the client's first tagged
  // message (a want_data) has arrived there; the client's end in `client`.
  std::unique_ptr<Connection> Served(ConnectOptions options, std::unique_ptr<Connection>* client) {
    auto listener = Listen(GetParam(), GetParam() == "ucx" ? "127.0.0.1:0" : "");
    EXPECT_OK(listener.status());
    if (!listener.ok()) return nullptr;
    options.limits.timeout = 10s;
    auto connected = Connect(GetParam(), (*listener)->address(), options);
    EXPECT_OK(connected.status());
    if (!connected.ok()) return nullptr;
    auto server = (*listener)->Accept(10s);
    EXPECT_OK(server.status());
    if (!server.ok()) return nullptr;
    const std::string ticket = "ticket";
    const ByteSpan piece{reinterpret_cast<const uint8_t*>(ticket.data()),
                         static_cast<int64_t>(ticket.size())};
    EXPECT_OK((*connected)->SendTagged(7, {&piece, 1}));
    auto want = (*server)->ReceiveTagged(7, ~uint64_t{0}, 10s);
    EXPECT_OK(want.status());
    if (want.ok()) {
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(want->payload.data),
                            static_cast<size_t>(want->payload.size)),
                ticket);
    }
    *client = std::move(*connected);
    return std::move(*server);
  }
};

TEST_P(TraceField, TheClientsTraceReachesTheServerBeforeItsRequest) {
  ConnectOptions options;
  options.extensions = true;
  options.trace = kTrace;
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server = Served(options, &client);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->trace(), kTrace);
  EXPECT_EQ(client->trace(), "");  // a server sends none
}

TEST_P(TraceField, WithoutATraceTheServerHasNone) {
  ConnectOptions options;
  options.extensions = true;
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server = Served(options, &client);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->trace(), "");
}

// The largest trace travels whole; a larger one is refused before anything is sent.
TEST_P(TraceField, TracesUpToTheLimitTravelAndLargerOnesAreRefused) {
  ConnectOptions options;
  options.extensions = true;
  options.trace = std::string(kMaxTraceBytes, 't');
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server = Served(options, &client);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->trace(), options.trace);
  options.trace += "t";
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "a trace of 1025 bytes is over the limit of 1024",
                     Connect(GetParam(), "127.0.0.1:1", options).status());
}

INSTANTIATE_TEST_SUITE_P(FerrysTransports, TraceField, ::testing::Values("shm", "ucx"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// A client that did not ask for ferry's extensions (a URI without ferry=1) says no hello over
// UCX, so its trace does not travel: the bare protocol is unchanged.
TEST(TraceFieldUcx, NoHelloNoTrace) {
  if (!UcxAvailable()) GTEST_SKIP() << "this build has no UCX";
  auto listener = Listen("ucx", "127.0.0.1:0");
  ASSERT_OK(listener.status());
  ConnectOptions options;
  options.limits.timeout = 10s;
  options.trace = kTrace;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> client,
                       Connect("ucx", (*listener)->address(), options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> server, (*listener)->Accept(10s));
  const uint8_t byte = 1;
  const ByteSpan piece{&byte, 1};
  ASSERT_OK(client->SendTagged(7, {&piece, 1}));
  ASSERT_OK(server->ReceiveTagged(7, ~uint64_t{0}, 10s).status());
  EXPECT_EQ(server->trace(), "");
  EXPECT_FALSE(server->extensions());
}

}  // namespace
}  // namespace ferry::transport
