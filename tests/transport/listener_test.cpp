// The UCX listener (src/transport/ucx/listener.hpp): each connection is accepted on a worker the
// listener made before the client's request came, and the next one is made once it is idle.
#if FERRY_WITH_UCX

#include "transport/ucx/listener.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "ferry/transport/ucx.hpp"
#include "support/test_util.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;
using internal::ucx::UcxListener;

// A round trip on a fresh connection: the client's tagged message reaches the server, and the
// server's reply reaches the client, byte for byte.
void ExpectRoundTrip(Connection& client, Connection& server, uint8_t seed) {
  const uint8_t question[3] = {seed, static_cast<uint8_t>(seed + 1),
                               static_cast<uint8_t>(seed + 2)};
  const ByteSpan q{question, sizeof(question)};
  ASSERT_OK(client.SendTagged(7, {&q, 1}));
  ASSERT_OK_AND_ASSIGN(TaggedMessage asked, server.ReceiveTagged(0, 0, 10s));
  EXPECT_EQ(asked.tag, 7u);
  ASSERT_EQ(asked.payload.size, 3);
  EXPECT_EQ(asked.payload.data[2], static_cast<uint8_t>(seed + 2));
  const uint8_t answer[2] = {static_cast<uint8_t>(seed * 3), 42};
  const ByteSpan a{answer, sizeof(answer)};
  ASSERT_OK(server.SendTagged(9, {&a, 1}));
  ASSERT_OK_AND_ASSIGN(TaggedMessage answered, client.ReceiveTagged(0, 0, 10s));
  EXPECT_EQ(answered.tag, 9u);
  ASSERT_EQ(answered.payload.size, 2);
  EXPECT_EQ(answered.payload.data[0], static_cast<uint8_t>(seed * 3));
  EXPECT_EQ(answered.payload.data[1], 42);
}

class UcxListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!UcxAvailable()) GTEST_SKIP() << "this build of ferry has no UCX transport";
    ASSERT_OK_AND_ASSIGN(listener_, ListenUcx("127.0.0.1:0", {}));
    ucx_ = dynamic_cast<UcxListener*>(listener_.get());
    ASSERT_NE(ucx_, nullptr);
  }

  std::unique_ptr<Listener> listener_;
  UcxListener* ucx_ = nullptr;
};

TEST_F(UcxListenerTest, EachConnectionIsAcceptedOnAWorkerMadeBeforeItsRequest) {
  // Made once the listener's thread is idle, before any client asks.
  ASSERT_TRUE(ucx_->AwaitSpare(10s));
  EXPECT_EQ(ucx_->accepted_on_spare(), 0);
  for (int i = 1; i <= 3; ++i) {
    SCOPED_TRACE("connection " + std::to_string(i));
    ConnectOptions options;
    options.limits.timeout = 10s;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> client,
                         ConnectUcx(listener_->address(), options));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> server, listener_->Accept(10s));
    // A spare made before the host's interfaces changed (another process's veths) is dropped.
    EXPECT_EQ(ucx_->accepted_on_spare() + ucx_->spares_dropped(), i);
    ExpectRoundTrip(*client, *server, static_cast<uint8_t>(10 * i));
    // The next client's worker is made again once this one is accepted.
    EXPECT_TRUE(ucx_->AwaitSpare(10s));
    client->Close();
    server->Close();
  }
}

TEST_F(UcxListenerTest, ClientsAtOnceEachGetAWorkingConnection) {
  // Two requests in one round: the first takes the worker made ahead, the second makes its own.
  ASSERT_TRUE(ucx_->AwaitSpare(10s));
  ConnectOptions options;
  options.limits.timeout = 10s;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> first,
                       ConnectUcx(listener_->address(), options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> second,
                       ConnectUcx(listener_->address(), options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> a, listener_->Accept(10s));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> b, listener_->Accept(10s));
  EXPECT_GE(ucx_->accepted_on_spare(), 1);
  EXPECT_LE(ucx_->accepted_on_spare(), 2);
  // Which accepted end is whose is not ordered: each client's message names it.
  const uint8_t one = 1, two = 2;
  const ByteSpan p1{&one, 1}, p2{&two, 1};
  ASSERT_OK(first->SendTagged(1, {&p1, 1}));
  ASSERT_OK(second->SendTagged(2, {&p2, 1}));
  ASSERT_OK_AND_ASSIGN(TaggedMessage from_a, a->ReceiveTagged(0, 0, 10s));
  ASSERT_OK_AND_ASSIGN(TaggedMessage from_b, b->ReceiveTagged(0, 0, 10s));
  EXPECT_NE(from_a.tag, from_b.tag);
  Connection& server_of_first = from_a.tag == 1 ? *a : *b;
  Connection& server_of_second = from_a.tag == 1 ? *b : *a;
  ExpectRoundTrip(*first, server_of_first, 30);
  ExpectRoundTrip(*second, server_of_second, 60);
}

TEST_F(UcxListenerTest, ClosingWithAWorkerWaitingEndsItAndRefusesClients) {
  ASSERT_TRUE(ucx_->AwaitSpare(10s));
  const std::string address = listener_->address();
  listener_->Close();
  EXPECT_FALSE(ucx_->AwaitSpare(0ms));
  ConnectOptions options;
  options.limits.timeout = 2s;
  options.connect_timeout = 2s;
  Result<std::unique_ptr<Connection>> late = ConnectUcx(address, options);
  EXPECT_FALSE(late.ok());
  EXPECT_EQ(ucx_->accepted_on_spare(), 0);
}

}  // namespace
}  // namespace ferry::transport

#endif  // FERRY_WITH_UCX
