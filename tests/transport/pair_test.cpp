// ferry's pairs over UCX: a metadata message and its body in one tagged message. The bytes
// against values worked out by hand, and the client's handling of pairs from a real server.
#include "transport/ucx/pair.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "ferry/transport/ucx.hpp"
#include "support/test_util.hpp"
#include "support/transport_util.hpp"
#include "transport/ucx/client_connection.hpp"

namespace ferry::transport {
namespace {

using namespace std::chrono_literals;
using internal::ucx::PairHead;
using internal::ucx::SplitPair;
using testing::kNumberMask;
using testing::Tag;

// The wire's constants, as docs/dipc.md states them.
constexpr uint64_t kPairBit = uint64_t{1} << 40;

SharedBytes Owned(std::vector<uint8_t> bytes) {
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return SharedBytes{owner->data(), static_cast<int64_t>(owner->size()), owner};
}

TEST(UcxPair, TheHeadIsTheLengthThenTheMetadataPaddedTo64Bytes) {
  const std::string a = "meta";
  const std::string b = "data!";
  const ByteSpan pieces[] = {{a.data(), 4}, {b.data(), 5}};
  ASSERT_OK_AND_ASSIGN(auto head, PairHead(pieces));
  std::vector<uint8_t> want(64, 0);  // 8 + 9 bytes, rounded up to 64
  want[0] = 9;
  std::memcpy(want.data() + 8, "metadata!", 9);
  EXPECT_EQ(*head, want);
  // 56 bytes of metadata fill the first 64 exactly; 57 need 128.
  const std::string m56(56, 'x');
  const ByteSpan p56{m56.data(), 56};
  ASSERT_OK_AND_ASSIGN(head, PairHead({&p56, 1}));
  EXPECT_EQ(head->size(), 64u);
  const std::string m57(57, 'x');
  const ByteSpan p57{m57.data(), 57};
  ASSERT_OK_AND_ASSIGN(head, PairHead({&p57, 1}));
  EXPECT_EQ(head->size(), 128u);
  EXPECT_EQ((*head)[0], 57);
}

TEST(UcxPair, SplitGivesViewsOfTheOneBuffer) {
  std::vector<uint8_t> bytes(64 + 3, 0);
  bytes[0] = 2;
  bytes[8] = 'o';
  bytes[9] = 'k';
  bytes[64] = 7;
  bytes[65] = 8;
  bytes[66] = 9;
  const SharedBytes pair = Owned(bytes);
  ASSERT_OK_AND_ASSIGN(auto parts, SplitPair(Tag(0, 1) | kPairBit, pair, 100));
  EXPECT_EQ(parts.metadata.data, pair.data + 8);
  EXPECT_EQ(parts.metadata.size, 2);
  EXPECT_EQ(parts.body.data, pair.data + 64);
  EXPECT_EQ(parts.body.size, 3);
  EXPECT_EQ(parts.body.owner, pair.owner);
}

TEST(UcxPair, AMalformedPairIsRefusedNamingItsTagAndSizes) {
  ASSERT_RAISES_WITH(
      StatusCode::kInvalidArgument,
      "the pair tagged 0x0000010000000003 is 4 bytes, shorter than its 8-byte header",
      SplitPair(Tag(0, 3) | kPairBit, Owned({1, 0, 0, 0}), 100).status());
  std::vector<uint8_t> lying(100, 0);
  lying[0] = 0x88;  // 5000 bytes of metadata announced
  lying[1] = 0x13;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "is 100 bytes, too short for the 5000-byte metadata message its header "
                     "announces (its body would start at byte 5056)",
                     SplitPair(Tag(0, 3) | kPairBit, Owned(lying), 10000).status());
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "announces a metadata message of 5000 bytes, over the limit of 4096 bytes",
                     SplitPair(Tag(0, 3) | kPairBit, Owned(lying), 4096).status());
}

class UcxPairs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!UcxAvailable()) GTEST_SKIP() << "this build of ferry has no UCX transport";
    ASSERT_OK_AND_ASSIGN(listener_, ListenUcx("127.0.0.1:0", {}));
  }
  // A client (with ferry's extensions or without) and the server's end of it; the client's
  // waits on `clock` where one is given.
  void Connect(bool extensions, int64_t max_message_bytes = 1 << 20,
               std::shared_ptr<Clock> clock = nullptr) {
    ConnectOptions options;
    options.limits.timeout = 5s;
    if (clock != nullptr) options.limits.clock = std::move(clock);
    options.connect_timeout = ferry::testing::kUcxWireUp;
    options.limits.max_message_bytes = max_message_bytes;
    options.extensions = extensions;
    ASSERT_OK_AND_ASSIGN(client_, ConnectUcx(listener_->address(), options));
    ASSERT_OK_AND_ASSIGN(server_, listener_->Accept(5s));
  }
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<Connection> client_, server_;
};

// A server that granted pairs sends a metadata message and a small body as one message, which
// the client splits; a body over 256 KiB goes apart, as two messages.
TEST_F(UcxPairs, AGrantedClientSplitsPairsIntoMetadataAndBody) {
  Connect(true);
  for (const int64_t size : {int64_t{24'000}, int64_t{300'000}}) {
    std::vector<uint8_t> body(static_cast<size_t>(size), 5);
    const std::string meta = "metadata of " + std::to_string(size);
    const ByteSpan head{meta.data(), static_cast<int64_t>(meta.size())};
    const ByteSpan piece{body.data(), size};
    ASSERT_OK(server_->SendMessageAndBody({&head, 1}, Tag(0, 1), {&piece, 1}));
    ASSERT_OK_AND_ASSIGN(SharedBytes m, client_->Receive(5s));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data), static_cast<size_t>(m.size)),
              meta);
    ASSERT_OK_AND_ASSIGN(TaggedMessage b, client_->ReceiveTagged(Tag(0, 1), ~uint64_t{0}, 5s));
    EXPECT_EQ(b.payload.size, size);
    EXPECT_EQ(std::memcmp(b.payload.data, body.data(), body.size()), 0);
    // A pair landed as one buffer: the two are views of it.
    EXPECT_EQ(b.payload.owner == m.owner, size <= int64_t{256} * 1024) << size;
  }
}

// The read-ahead stops for a thread that waits for the worker's lock (one sending a credit or a
// free, which does not poll), and what it leaves in UCX's queue no event announces again. That
// thread's release of the lock wakes the progress thread for it, so a reader already asleep for
// the metadata of a pair left there gets it.
TEST_F(UcxPairs, APairLeftByAReadAheadStoppedForALockWaiterReachesTheSleepingReader) {
  auto clock = std::make_shared<ManualClock>();
  Connect(true, 1 << 20, clock);
  auto* client = dynamic_cast<internal::ucx::ClientConnection*>(client_.get());
  ASSERT_NE(client, nullptr);
  std::thread waiter;
  std::atomic<bool> stopped{false};
  // On the progress thread, once the pair lies in UCX's queue: a thread that takes the lock and
  // lets it go at once, waiting in Lock() before the read-ahead looks.
  client->SetReadAheadHookForTest([&](internal::ucx::Worker& worker) {
    ucp_tag_recv_info_t info{};
    if (stopped || ucp_tag_probe_nb(worker.handle(), 0, 0, 0, &info) == nullptr) return;
    waiter = std::thread([&worker] { internal::ucx::WorkerLock lock = worker.Lock(); });
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!worker.LockWanted() && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    stopped = true;
  });
  auto reader = std::async(std::launch::async, [&] { return client_->Receive(10s); });
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));  // the reader sleeps in its receive
  const std::string meta = "the pair's metadata";
  std::vector<uint8_t> body(1000, 7);
  const ByteSpan head{meta.data(), static_cast<int64_t>(meta.size())};
  const ByteSpan piece{body.data(), static_cast<int64_t>(body.size())};
  ASSERT_OK(server_->SendMessageAndBody({&head, 1}, Tag(0, 1), {&piece, 1}));
  // A bound in real time: the receive's own timeout runs on the test's clock, which only this
  // test moves, so a reader never woken would sleep on.
  const bool arrived = reader.wait_for(10s) == std::future_status::ready;
  if (!arrived) clock->Advance(11s);
  Result<SharedBytes> m = reader.get();
  client->SetReadAheadHookForTest({});  // under the worker's lock: after the hook's last run
  if (waiter.joinable()) waiter.join();
  EXPECT_TRUE(stopped) << "the read-ahead never found the pair in UCX's queue";
  ASSERT_TRUE(arrived) << "the reader was not woken for the pair the read-ahead left behind";
  ASSERT_OK(m.status());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data), static_cast<size_t>(m->size)),
            meta);
}

// Without ferry's extensions there was no hello, so no pairs: bit 40 is one of the protocol's
// reserved bits, and the message reaches the caller as sent, for the session to refuse.
TEST_F(UcxPairs, WithoutTheHelloTheBitIsLeftToTheSession) {
  Connect(false);
  const std::string x = "not a pair";
  const ByteSpan piece{x.data(), static_cast<int64_t>(x.size())};
  ASSERT_OK(server_->SendTagged(Tag(0, 1) | kPairBit, {&piece, 1}));
  ASSERT_OK_AND_ASSIGN(TaggedMessage m, client_->ReceiveTagged(1, kNumberMask, 5s));
  EXPECT_EQ(m.tag, Tag(0, 1) | kPairBit);
  EXPECT_EQ(m.payload.size, static_cast<int64_t>(x.size()));
}

// A malformed pair from a server that granted them fails the connection, naming what was wrong.
TEST_F(UcxPairs, AMalformedPairFailsTheConnectionNamingIt) {
  Connect(true, 4096);
  std::vector<uint8_t> lying(100, 0);
  lying[0] = 0x88;  // 5000 bytes of metadata announced, over the client's 4096
  lying[1] = 0x13;
  const ByteSpan piece{lying.data(), 100};
  ASSERT_OK(server_->SendTagged(Tag(0, 2) | kPairBit, {&piece, 1}));
  ASSERT_RAISES_WITH(StatusCode::kUnavailable,
                     "malformed pair: the pair tagged 0x0000010000000002 announces a metadata "
                     "message of 5000 bytes, over the limit of 4096 bytes",
                     client_->Receive(5s).status());
}

// Beside pairs, a lone metadata message travels tagged; over the client's limit it fails the
// connection as one sent as an Active Message does, naming both sizes.
TEST_F(UcxPairs, ALoneMetadataMessageOverTheLimitFailsTheConnectionNamingIt) {
  Connect(true, 4096);
  const std::vector<uint8_t> big(5000, 7);
  const ByteSpan piece{big.data(), 5000};
  ASSERT_OK(server_->Send({&piece, 1}));
  ASSERT_RAISES_WITH(StatusCode::kUnavailable,
                     "a metadata message of 5000 bytes is over the limit of 4096 bytes",
                     client_->Receive(5s).status());
}

}  // namespace
}  // namespace ferry::transport
