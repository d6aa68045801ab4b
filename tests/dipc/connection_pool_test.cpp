// ConnectionPool: its bookkeeping with connections that count their closes, then kept UCX
// connections between a client and a ferry server (each stream's rows against the hand-built
// batches, the server's counters for what was connected and what was reused).
#include "ferry/dipc/connection_pool.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/clock_util.hpp"
#include "support/device_util.hpp"
#include "support/dipc_data.hpp"
#include "support/test_util.hpp"

namespace ferry::dipc {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

// A connection that only counts its closes.
class Counted final : public transport::Connection {
 public:
  Status Send(std::span<const ByteSpan>) override { return Status::NotSupported("counted"); }
  Status SendTagged(uint64_t, std::span<const ByteSpan>) override {
    return Status::NotSupported("counted");
  }
  Result<SharedBytes> Receive(std::chrono::milliseconds) override {
    return Status::NotSupported("counted");
  }
  Result<transport::TaggedMessage> ReceiveTagged(uint64_t, uint64_t,
                                                 std::chrono::milliseconds) override {
    return Status::NotSupported("counted");
  }
  void Close() override { ++closes; }
  int closes = 0;
};

TEST(ConnectionPool, TakeGivesTheLastReturnedOfItsKeyOnly) {
  ConnectionPool pool;
  auto c1 = std::make_shared<Counted>();
  auto c2 = std::make_shared<Counted>();
  auto c3 = std::make_shared<Counted>();
  pool.Give("a", c1);
  pool.Give("a", c2);
  pool.Give("b", c3);
  EXPECT_EQ(pool.idle(), 3u);
  EXPECT_TRUE(pool.Holds("a"));
  EXPECT_FALSE(pool.Holds("c"));
  EXPECT_EQ(pool.Take("a"), c2);
  EXPECT_EQ(pool.Take("a"), c1);
  EXPECT_EQ(pool.Take("a"), nullptr);
  EXPECT_FALSE(pool.Holds("a"));
  EXPECT_EQ(pool.Take("c"), nullptr);
  EXPECT_EQ(pool.Take("b"), c3);
  EXPECT_EQ(c1->closes + c2->closes + c3->closes, 0);  // what is taken is the taker's to close
}

TEST(ConnectionPool, OneIdleLongerThanMaxIdleIsClosedNotGiven) {
  auto clock = std::make_shared<ManualClock>();
  ConnectionPool pool(10s, 4, clock);
  auto old = std::make_shared<Counted>();
  pool.Give("a", old);
  clock->Advance(6s);
  auto fresh = std::make_shared<Counted>();
  pool.Give("a", fresh);
  clock->Advance(5s);  // `old` is 11 s idle, `fresh` 5 s
  EXPECT_TRUE(pool.Holds("a"));
  EXPECT_EQ(pool.idle(), 1u);
  EXPECT_EQ(old->closes, 1);
  EXPECT_EQ(pool.Take("a"), fresh);
  EXPECT_EQ(pool.Take("a"), nullptr);
  EXPECT_EQ(fresh->closes, 0);
}

TEST(ConnectionPool, BeyondPerServerTheOldestIsClosed) {
  ConnectionPool pool(10s, 2);
  std::vector<std::shared_ptr<Counted>> c;
  for (int i = 0; i < 3; ++i) {
    c.push_back(std::make_shared<Counted>());
    pool.Give("a", c.back());
  }
  pool.Give("b", std::make_shared<Counted>());  // another server's count is its own
  EXPECT_EQ(c[0]->closes, 1);
  EXPECT_EQ(c[1]->closes + c[2]->closes, 0);
  EXPECT_EQ(pool.idle(), 3u);
}

TEST(ConnectionPool, ThePoolClosesWhatItHoldsWhenItGoes) {
  auto c = std::make_shared<Counted>();
  {
    ConnectionPool pool;
    pool.Give("a", c);
  }
  EXPECT_EQ(c->closes, 1);
}

// A dataset whose readers open once Let() was called (or after 20 s): a server that says nothing
// after a request, as a stopped one does, while its process runs on.
class Gated final : public Dataset {
 public:
  explicit Gated(std::shared_ptr<Dataset> inner) : inner_(std::move(inner)) {}
  Result<std::unique_ptr<DatasetReader>> Open() override {
    {
      std::unique_lock lock(mutex_);
      let_through_.wait_for(lock, 20s, [this] { return open_; });
    }
    return inner_->Open();
  }
  bool repeatable() const noexcept override { return inner_->repeatable(); }
  void Let() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    let_through_.notify_all();
  }

 private:
  std::shared_ptr<Dataset> inner_;
  std::mutex mutex_;
  std::condition_variable let_through_;
  bool open_ = false;
};

// A ferry server over UCX whose clients keep their connections: packed bodies unless
// `body_type` says otherwise, its log lines kept.
class KeptConnections : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!transport::UcxAvailable()) {
      GTEST_SKIP() << "this build has no UCX transport (libucx-dev was not found)";
    }
  }

  void Start(BodyType body_type = BodyType::kPacked, std::shared_ptr<Clock> clock = nullptr) {
    ServerOptions options;
    options.transport = "ucx";
    options.body_type = body_type;
    if (clock) options.clock = std::move(clock);
    options.log = [this](const std::string& line) {
      std::lock_guard lock(mutex_);
      lines_.push_back(line);
    };
    ASSERT_OK_AND_ASSIGN(server_, Server::Start(options));
    ASSERT_OK_AND_ASSIGN(big_, testing::IntBatches(6, 2000));
    ASSERT_OK_AND_ASSIGN(small_, testing::IntBatches(2, 10));
    ASSERT_OK(server_->Keep("kept", big_.dataset));
    server_->Add("read", small_.dataset);
  }

  // Read `name` to its end with `options` and check every row.
  void ReadAll(const std::string& name, const ClientOptions& options) {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s,
                         ConnectStream(server_->uri(name), name, options));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, name == "kept" ? big_.expected : small_.expected) << name;
  }

  bool Logged(const std::string& what) {
    std::lock_guard lock(mutex_);
    for (const std::string& line : lines_) {
      if (line.find(what) != std::string::npos) return true;
    }
    return false;
  }

  // The log's lines outlive the server, whose sessions may log until it has gone.
  std::mutex mutex_;
  std::vector<std::string> lines_;
  std::unique_ptr<Server> server_;
  testing::IntData big_, small_;
};

TEST_F(KeptConnections, AStreamReadToItsEndLeavesItsConnectionForTheNext) {
  Start();
  // The default window, and a window of one batch, whose credits the server must not confuse
  // with the last stream's.
  for (int64_t window : {int64_t{-1}, int64_t{1}}) {
    SCOPED_TRACE("window " + std::to_string(window));
    const ServerStats before = server_->stats();
    ClientOptions options;
    options.window = window;
    options.pool = std::make_shared<ConnectionPool>();
    ReadAll("kept", options);
    EXPECT_EQ(options.pool->idle(), 1u);
    // Between its streams a kept connection is not a client being served.
    EXPECT_TRUE(server_->AwaitIdle(5s));
    ReadAll("read", options);
    ReadAll("kept", options);
    const ServerStats after = server_->stats();
    EXPECT_EQ(after.clients_accepted - before.clients_accepted, 1);
    EXPECT_EQ(after.requests_reused - before.requests_reused, 2);
    EXPECT_EQ(after.batches_sent - before.batches_sent, 6 + 2 + 6);
    EXPECT_EQ(after.sessions_failed, 0) << server_->last_error();
    EXPECT_EQ(options.pool->idle(), 1u);
  }
}

TEST_F(KeptConnections, AStreamLeftBeforeItsEndClosesItsConnection) {
  Start();
  ClientOptions options;
  options.pool = std::make_shared<ConnectionPool>();
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s,
                         ConnectStream(server_->uri("kept"), "kept", options));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> first, testing::DrainToJson(s.get(), 1));
    EXPECT_EQ(first.size(), 1u);  // one batch of six
  }
  EXPECT_EQ(options.pool->idle(), 0u);
  ReadAll("kept", options);
  EXPECT_EQ(server_->stats().clients_accepted, 2);
  EXPECT_EQ(server_->stats().requests_reused, 0);
}

TEST_F(KeptConnections, AStreamThatLentMemoryIsNotKept) {
  Start(BodyType::kBufferList);
  ClientOptions options;
  options.buffer_lists = true;  // lent on every UCX, one host or not
  options.pool = std::make_shared<ConnectionPool>();
  ReadAll("kept", options);
  EXPECT_EQ(options.pool->idle(), 0u);
  ReadAll("kept", options);
  EXPECT_TRUE(server_->AwaitIdle(5s));
  const ServerStats stats = server_->stats();
  EXPECT_EQ(stats.clients_accepted, 2);
  EXPECT_EQ(stats.requests_reused, 0);
  EXPECT_EQ(stats.addresses_freed, stats.addresses_lent);
  EXPECT_EQ(stats.packed_batches_sent, 0);
}

TEST_F(KeptConnections, AKeptConnectionTheServerClosedIsReplacedByANewOne) {
  auto clock = std::make_shared<ManualClock>();
  Start(BodyType::kPacked, clock);
  ClientOptions options;
  options.pool = std::make_shared<ConnectionPool>();
  ReadAll("read", options);
  ASSERT_TRUE(server_->AwaitIdle(5s));
  // The session waits on the server's clock for the next request; past the timeout it closes.
  ASSERT_TRUE(clock->AwaitWaiters(1, 5s));
  clock->Advance(30001ms);
  ASSERT_TRUE(testing::Within(5s, [&] { return Logged("without a request: closed"); }));
  ReadAll("read", options);
  const ServerStats stats = server_->stats();
  EXPECT_EQ(stats.clients_accepted, 2);
  EXPECT_EQ(stats.requests_reused, 0);
  EXPECT_EQ(stats.sessions_failed, 0) << server_->last_error();
}

TEST_F(KeptConnections, ADrainingServerRefusesAKeptConnectionsRequestByName) {
  Start();
  ClientOptions options;
  options.pool = std::make_shared<ConnectionPool>();
  ReadAll("read", options);
  server_->Drain();
  EXPECT_TRUE(server_->AwaitIdle(5s));  // the kept connection holds no drain up
  Result<UniqueDeviceArrayStream> s = ConnectStream(server_->uri("read"), "read", options);
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "draining", s.status());
}

// On a kept connection the server's schema stands in for connecting: a server silent after the
// request fails the stream at the connect timeout, not the read's timeout, and the connection is
// not kept; a new one reads the dataset once the server answers again.
TEST_F(KeptConnections, AKeptConnectionsSilentServerFailsAtTheConnectTimeout) {
  Start();
  auto gated = std::make_shared<Gated>(small_.dataset);
  server_->Add("gated", gated);
  auto clock = std::make_shared<ManualClock>(std::chrono::steady_clock::now(), 20s);
  ClientOptions options;
  options.pool = std::make_shared<ConnectionPool>();
  options.clock = clock;
  options.connect_timeout = 2s;
  ReadAll("read", options);
  ASSERT_EQ(options.pool->idle(), 1u);
  Result<UniqueDeviceArrayStream> s = testing::AtTheDeadline(
      *clock, 2s, [&] { return ConnectStream(server_->uri("gated"), "gated", options); });
  ASSERT_RAISES_WITH(StatusCode::kDeadlineExceeded,
                     "sent nothing for 2000 ms (the connect timeout) on the connection kept",
                     s.status());
  EXPECT_EQ(options.pool->idle(), 0u);
  gated->Let();
  ReadAll("gated", options);
  EXPECT_EQ(server_->stats().clients_accepted, 2);
}

TEST_F(KeptConnections, AStoppedServerFailsTheNextStreamAtOnce) {
  Start();
  ClientOptions options;
  options.pool = std::make_shared<ConnectionPool>();
  options.timeout = 20s;
  ReadAll("read", options);
  const Uri uri = server_->uri("read");
  server_->Stop();
  const auto start = std::chrono::steady_clock::now();
  Result<UniqueDeviceArrayStream> s = ConnectStream(uri, "read", options);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().message();
  // Found closed (the kept one) and refused (a new one): not the 20 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace ferry::dipc
