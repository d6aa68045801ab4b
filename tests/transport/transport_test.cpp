// The transport conformance suite: written once, run on every transport. Ordering of untagged
// messages, tag-and-mask matching out of order, timeouts, close semantics, concurrency and large
// payloads. Every pair is timed by a ManualClock: timeouts are seen by moving it, at their
// deadline and not a tick before, and no test waits for time to pass. Also ferry's trace field
// (ConnectOptions::trace) on its two transports.
#include "ferry/transport/transport.hpp"

#include <unistd.h>

#include <cstring>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <thread>

#include "ferry/transport/in_process.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/clock_util.hpp"
#include "support/test_util.hpp"
#include "support/transport_util.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;
using Pair = std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>>;
using ferry::testing::AtTheDeadline;
using ferry::testing::kTick;
using testing::kNumberMask;
using testing::Tag;

struct TransportCase {
  std::string name;
  std::function<Pair(std::shared_ptr<Clock>)> make;
};

// A connected pair over a fresh listener of `scheme`, both ends timed by `clock` and spinning
// `spin` before they sleep in a receive; the listener goes once both ends exist.
Pair ListenAndConnect(const std::string& scheme, const std::shared_ptr<Clock>& clock,
                      std::chrono::microseconds spin = 0us, bool extensions = false) {
  TransportLimits limits;
  limits.clock = clock;
  limits.spin = spin;
  auto listener = Listen(scheme, "", limits);
  if (!listener.ok()) return {};
  ConnectOptions options;
  options.limits.timeout = 5s;
  options.connect_timeout = ferry::testing::kUcxWireUp;
  options.limits.clock = clock;
  options.limits.spin = spin;
  options.extensions = extensions;
  auto client = Connect(scheme, (*listener)->address(), options);
  if (!client.ok()) return {};
  auto server = (*listener)->Accept(5s);
  if (!server.ok()) return {};
  return {std::move(*server), std::move(*client)};
}

std::vector<TransportCase> Transports() {
  return {
      {"InProcess", &MakeInProcessPair},
      {"Shm", [](const std::shared_ptr<Clock>& clock) { return ListenAndConnect("shm", clock); }},
      {"Ucx",
       [](const std::shared_ptr<Clock>& clock) {
         // A build without UCX skips this case (SetUp sees the skip) instead of failing.
         if (!UcxAvailable()) {
           [] { GTEST_SKIP() << "this build of ferry has no UCX transport"; }();
           return Pair{};
         }
         return ListenAndConnect("ucx", clock);
       }},
      // Receivers that spin first: over shm the waiting caller then reads the socket itself.
      {"ShmSpinning",
       [](const std::shared_ptr<Clock>& clock) { return ListenAndConnect("shm", clock, 50us); }},
      {"UcxSpinning",
       [](const std::shared_ptr<Clock>& clock) {
         if (!UcxAvailable()) {
           [] { GTEST_SKIP() << "this build of ferry has no UCX transport"; }();
           return Pair{};
         }
         return ListenAndConnect("ucx", clock, 50us);
       }},
      // ferry's extensions (a URI's ferry=1): on one host the fast path, and a metadata message
      // and a small body sent together travel as one message.
      {"UcxExtensions", [](const std::shared_ptr<Clock>& clock) {
         if (!UcxAvailable()) {
           [] { GTEST_SKIP() << "this build of ferry has no UCX transport"; }();
           return Pair{};
         }
         return ListenAndConnect("ucx", clock, 50us, true);
       }}};
}

class TransportConformance : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    std::tie(a_, b_) = Transports()[GetParam()].make(clock_);
    if (IsSkipped()) return;
    ASSERT_TRUE(a_ && b_) << "could not connect a pair over " << Transports()[GetParam()].name;
  }
  // Nobody moves it but the tests of timeouts: the other waits end by what arrives.
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<Connection> a_, b_;
};

std::string Text(const SharedBytes& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data), static_cast<size_t>(bytes.size));
}

Status SendText(Connection& c, const std::string& head, const std::string& tail) {
  const ByteSpan pieces[] = {{head.data(), static_cast<int64_t>(head.size())},
                             {tail.data(), static_cast<int64_t>(tail.size())}};
  return c.Send(pieces);
}

TEST_P(TransportConformance, UntaggedMessagesKeepTheirOrderAndBytes) {
  for (int i = 0; i < 100; ++i) ASSERT_OK(SendText(*a_, "m", std::to_string(i)));
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK_AND_ASSIGN(SharedBytes m, b_->Receive(1s));
    EXPECT_EQ(Text(m), "m" + std::to_string(i));
  }
}

TEST_P(TransportConformance, TaggedMessagesMatchByTagAndMask) {
  // Bodies for sequence numbers 3, 1, 2 arrive out of order, with mixed body types.
  for (uint32_t seq : {3u, 1u, 2u}) {
    const std::string payload = "body" + std::to_string(seq);
    const ByteSpan piece{payload.data(), static_cast<int64_t>(payload.size())};
    ASSERT_OK(a_->SendTagged(Tag(seq == 2 ? 1 : 0, seq), {&piece, 1}));
  }
  for (uint32_t seq : {1u, 2u, 3u}) {
    ASSERT_OK_AND_ASSIGN(TaggedMessage m, b_->ReceiveTagged(seq, kNumberMask, 1s));
    EXPECT_EQ(m.tag & kNumberMask, seq);
    EXPECT_EQ(Text(m.payload), "body" + std::to_string(seq));
    EXPECT_EQ(m.tag >> 56, seq == 2 ? 1u : 0u);
  }
  // An exact match (full mask) does not take a message with another body type.
  const std::string x = "x";
  const ByteSpan piece{x.data(), 1};
  ASSERT_OK(a_->SendTagged(Tag(1, 9), {&piece, 1}));
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", AtTheDeadline(*clock_, 10ms, [&] {
                       return b_->ReceiveTagged(Tag(0, 9), ~uint64_t{0}, 10ms).status();
                     }));
  ASSERT_OK(b_->ReceiveTagged(Tag(1, 9), ~uint64_t{0}, 1s).status());
}

// A message received with the body asked for beside it: the body comes with it only when its
// tag matches and it has come already, never a body of another tag, and every body is had once,
// with the message or by a receive of its own.
TEST_P(TransportConformance, AMessageComesWithItsBodyOnlyWhenThatBodyIsTheOneAskedFor) {
  const auto send = [&](uint32_t i, bool with_body) {
    const std::string meta = "m" + std::to_string(i);
    const std::string body = "body" + std::to_string(i);
    const ByteSpan head{meta.data(), static_cast<int64_t>(meta.size())};
    const ByteSpan piece{body.data(), static_cast<int64_t>(body.size())};
    return with_body ? a_->SendMessageAndBody({&head, 1}, Tag(0, i), {&piece, 1})
                     : a_->Send({&head, 1});
  };
  ASSERT_OK(send(0, true));
  ASSERT_OK(send(1, false));
  ASSERT_OK(send(2, true));
  // Asked for a tag no body has: message 0 comes alone, and its body stays for its receive.
  ASSERT_OK_AND_ASSIGN(MessageAndBody got, b_->ReceiveMessageAndBody(7, kNumberMask, 5s));
  EXPECT_EQ(Text(got.message), "m0");
  EXPECT_FALSE(got.body.has_value());
  ASSERT_OK_AND_ASSIGN(TaggedMessage body, b_->ReceiveTagged(0, kNumberMask, 5s));
  EXPECT_EQ(Text(body.payload), "body0");
  // Body 2, asked for with messages 1 and 2, comes once: with one of them, or on its own.
  int bodies = 0;
  for (uint32_t i : {1u, 2u}) {
    ASSERT_OK_AND_ASSIGN(got, b_->ReceiveMessageAndBody(2, kNumberMask, 5s));
    EXPECT_EQ(Text(got.message), "m" + std::to_string(i));
    if (got.body) {
      ++bodies;
      EXPECT_EQ(got.body->tag, Tag(0, 2));
      EXPECT_EQ(Text(got.body->payload), "body2");
    }
  }
  if (bodies == 0) {
    ASSERT_OK_AND_ASSIGN(body, b_->ReceiveTagged(2, kNumberMask, 5s));
    EXPECT_EQ(Text(body.payload), "body2");
    ++bodies;
  }
  EXPECT_EQ(bodies, 1);
  // A body not sent yet is not waited for: the message comes alone, the body to its receive.
  ASSERT_OK(send(3, false));
  ASSERT_OK_AND_ASSIGN(got, b_->ReceiveMessageAndBody(3, kNumberMask, 5s));
  EXPECT_EQ(Text(got.message), "m3");
  EXPECT_FALSE(got.body.has_value());
  const std::string late = "late";
  const ByteSpan piece{late.data(), 4};
  ASSERT_OK(a_->SendTagged(Tag(0, 3), {&piece, 1}));
  ASSERT_OK_AND_ASSIGN(body, b_->ReceiveTagged(3, kNumberMask, 5s));
  EXPECT_EQ(Text(body.payload), "late");
  // Nothing was left behind: no body of tag 2 is had twice.
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", AtTheDeadline(*clock_, 10ms, [&] {
                       return b_->ReceiveTagged(2, kNumberMask, 10ms).status();
                     }));
}

TEST_P(TransportConformance, ReceivesTimeOutAtTheirDeadlineWithAClearError) {
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out waiting for an untagged message",
                     AtTheDeadline(*clock_, 10ms, [&] { return b_->Receive(10ms).status(); }));
  ASSERT_RAISES_WITH(
      StatusCode::kDeadlineExceeded, "timed out waiting for a tagged message",
      AtTheDeadline(*clock_, 1h, [&] { return b_->ReceiveTagged(1, kNumberMask, 1h).status(); }));
  // A receive with no time to wait looks once and does not wait.
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded, "timed out", b_->Receive(0ms));
  EXPECT_EQ(clock_->waiters(), 0);
}

TEST_P(TransportConformance, CloseDrainsThenFails) {
  ASSERT_OK(SendText(*a_, "last", ""));
  a_->Close();
  ASSERT_OK_AND_ASSIGN(SharedBytes m, b_->Receive(1s));
  EXPECT_EQ(Text(m), "last");
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "peer closed", b_->Receive(1s));
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "closed", SendText(*b_, "late", ""));
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "closed", SendText(*a_, "late", ""));
}

TEST_P(TransportConformance, CloseWakesABlockedReceiver) {
  std::thread closer([this] {
    // Once the receive waits (on the clock, which nobody moves).
    EXPECT_TRUE(clock_->AwaitWaiters(1, 10s));
    a_->Close();
  });
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "peer closed",
                     b_->ReceiveTagged(1, kNumberMask, 10s));
  closer.join();
}

TEST_P(TransportConformance, ConcurrentSendersLoseNothing) {
  constexpr uint32_t kThreads = 4;
  constexpr uint32_t kEach = 250;
  std::vector<std::thread> senders;
  for (uint32_t t = 0; t < kThreads; ++t) {
    senders.emplace_back([this, t] {
      for (uint32_t i = 0; i < kEach; ++i) {
        const uint32_t seq = t * kEach + i;
        const ByteSpan piece{&seq, 4};
        EXPECT_OK(a_->SendTagged(Tag(0, seq), {&piece, 1}));
      }
    });
  }
  std::set<uint32_t> seen;
  for (uint32_t k = 0; k < kThreads * kEach; ++k) {
    ASSERT_OK_AND_ASSIGN(TaggedMessage m, b_->ReceiveTagged(0, 0, 5s));  // mask 0: any
    uint32_t payload = 0;
    std::memcpy(&payload, m.payload.data, 4);
    EXPECT_EQ(payload, m.tag & kNumberMask);
    seen.insert(payload);
  }
  for (std::thread& s : senders) s.join();
  EXPECT_EQ(seen.size(), kThreads * kEach);
}

TEST_P(TransportConformance, LargePayloadsArriveIntact) {
  std::vector<uint8_t> big(8 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 131 + 7);
  const ByteSpan piece{big.data(), static_cast<int64_t>(big.size())};
  ASSERT_OK(a_->SendTagged(Tag(0, 5), {&piece, 1}));
  ASSERT_OK_AND_ASSIGN(TaggedMessage m, b_->ReceiveTagged(5, kNumberMask, 5s));
  ASSERT_EQ(m.payload.size, static_cast<int64_t>(big.size()));
  EXPECT_EQ(std::memcmp(m.payload.data, big.data(), big.size()), 0);
}

// Untagged messages keep their order whether they went alone or with a body, and each body
// arrives whole under its tag, aligned for Arrow: small bodies (sent with their metadata where
// the transport can) and large ones (sent apart), none read until all were sent.
TEST_P(TransportConformance, MetadataKeepsItsOrderBesideTheBodiesSentWithIt) {
  constexpr uint32_t kMessages = 120;
  const auto body_size = [](uint32_t i) -> size_t { return i % 4 == 0 ? 300'000 : 24'000 + i; };
  std::vector<uint8_t> bytes(300'000 + kMessages);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 31 + 5);
  for (uint32_t i = 0; i < kMessages; ++i) {
    const std::string meta = "m" + std::to_string(i);
    const ByteSpan head{meta.data(), static_cast<int64_t>(meta.size())};
    if (i % 10 == 9) {
      ASSERT_OK(a_->Send({&head, 1}));  // a metadata message without a body
      continue;
    }
    // The body in two pieces, as a batch's buffers go.
    const size_t size = body_size(i);
    const ByteSpan body[] = {{bytes.data() + i, 1000},
                             {bytes.data() + i + 1000, static_cast<int64_t>(size - 1000)}};
    ASSERT_OK(a_->SendMessageAndBody({&head, 1}, Tag(0, i), body));
  }
  for (uint32_t i = 0; i < kMessages; ++i) {
    ASSERT_OK_AND_ASSIGN(SharedBytes m, b_->Receive(5s));
    ASSERT_EQ(Text(m), "m" + std::to_string(i));
    if (i % 10 == 9) continue;
    ASSERT_OK_AND_ASSIGN(TaggedMessage body, b_->ReceiveTagged(i, kNumberMask, 5s));
    EXPECT_EQ(body.tag, Tag(0, i));
    ASSERT_EQ(body.payload.size, static_cast<int64_t>(body_size(i)));
    EXPECT_EQ(std::memcmp(body.payload.data, bytes.data() + i, body_size(i)), 0) << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(body.payload.data) % 8, 0u) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTransports, TransportConformance,
                         ::testing::Range<size_t>(0, Transports().size()),
                         [](const ::testing::TestParamInfo<size_t>& param_info) {
                           return Transports()[param_info.param].name;
                         });

// A caller that knows the server is up gives up on an address that does not answer after
// connect_timeout (retrying until then), not after the connection's timeout (30 s here).
TEST(TransportConnect, ConnectTimeoutBoundsTheRetries) {
  auto clock = std::make_shared<ManualClock>();
  ConnectOptions options;
  options.limits.timeout = 30s;
  options.limits.clock = clock;
  options.connect_timeout = 200ms;
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "connecting to shm://@ferry-test-nobody",
                     AtTheDeadline(*clock, 200ms, [&] {
                       return Connect("shm", "@ferry-test-nobody-listens-here", options).status();
                     }));
}

// A connect made before the server listens waits between tries by the clock, and reaches the
// server at the first try after it listens.
TEST(TransportConnect, AConnectRetriesUntilTheServerListens) {
  auto clock = std::make_shared<ManualClock>();
  const std::string address = "@ferry-test-late-" + std::to_string(getpid());
  ConnectOptions options;
  options.limits.clock = clock;
  auto connecting =
      std::async(std::launch::async, [&] { return Connect("shm", address, options); });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));  // the first try failed: nothing listens
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Listener> listener, Listen("shm", address));
  clock->Advance(10ms);  // the next try
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> client, connecting.get());
  ASSERT_OK(listener->Accept(5s).status());
}

// An accept ends at its timeout by the listener's clock, and a closed listener's at once.
TEST(TransportListen, AcceptTimesOutAtItsDeadline) {
  auto clock = std::make_shared<ManualClock>();
  TransportLimits limits;
  limits.clock = clock;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Listener> listener, Listen("shm", "", limits));
  ASSERT_RAISES_WITH(
      StatusCode::kDeadlineExceeded, "timed out waiting for a client",
      AtTheDeadline(*clock, 250ms, [&] { return listener->Accept(250ms).status(); }));
  std::thread closer([&] {
    EXPECT_TRUE(clock->AwaitWaiters(1, 10s));
    listener->Close();
  });
  ASSERT_RAISES_WITH(StatusCode::kCancelled, "closed", listener->Accept(1h));
  closer.join();
}

// ferry's trace field: bytes a client gives ConnectOptions::trace reach the server's end before
// its first message (a trace frame over shared memory, a field of the hello over UCX), and
// nothing travels without them, or to a UCX server the client did not ask for extensions.

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
