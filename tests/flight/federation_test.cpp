// A federated server's merge of its own FlightInfo with its peers' (the rules of
// docs/flight.md#federation, with hand-written infos), and the federation against real servers:
// a peer down fails the call naming it, or with allow_partial is named in app_metadata; many
// callers at once are answered on the pool's threads alone; a stalled peer's question ends at the
// peer timeout by a ManualClock. The
// served result is checked against pyarrow.flight in tests/flight/test_federation.py.
#include "flight/federation.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "ferry/flight/info.hpp"
#include "ferry/format/schema.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight::internal {
namespace {

FlightInfo Info(const std::string& schema, std::vector<Endpoint> endpoints, int64_t records,
                int64_t bytes, bool ordered = true) {
  FlightInfo info;
  info.path = {"t"};
  info.schema = schema;
  info.endpoints = std::move(endpoints);
  info.total_records = records;
  info.total_bytes = bytes;
  info.ordered = ordered;
  return info;
}

TEST(MergeInfos, OwnEndpointsFirstThenEachPeersNamingTheirOwner) {
  const std::string peer = "grpc://10.0.0.2:8815";
  std::vector<OwnedInfo> answers;
  answers.push_back({"", Info("S", {{"own", {"shm://a", kReuseConnection}, {}}}, 10, 100)});
  answers.push_back(
      {peer,
       Info("S", {{"p0", {"ucx://10.0.0.2:1", kReuseConnection}, {}}, {"p1", {}, {}}}, 5, 50)});
  ASSERT_OK_AND_ASSIGN(FlightInfo merged, MergeInfos("t", std::move(answers)));
  ASSERT_EQ(merged.endpoints.size(), 3u);
  EXPECT_EQ(merged.endpoints[0].ticket, "own");
  EXPECT_EQ(merged.endpoints[0].locations, (std::vector<std::string>{"shm://a", kReuseConnection}));
  EXPECT_EQ(merged.endpoints[1].ticket, "p0");
  EXPECT_EQ(merged.endpoints[1].locations, (std::vector<std::string>{"ucx://10.0.0.2:1", peer}));
  // An endpoint that listed nothing (redeem where you asked) now names its owner.
  EXPECT_EQ(merged.endpoints[2].locations, std::vector<std::string>{peer});
  EXPECT_EQ(merged.total_records, 15);
  EXPECT_EQ(merged.total_bytes, 150);
  EXPECT_FALSE(merged.ordered);
  EXPECT_EQ(merged.path, std::vector<std::string>{"t"});
}

TEST(MergeInfos, OneServersFlightKeepsItsOrderAndAnUnknownSizeStaysUnknown) {
  std::vector<OwnedInfo> one;
  one.push_back({"grpc://b:1", Info("S", {{"x", {"grpc://b:1"}, {}}}, 7, -1)});
  ASSERT_OK_AND_ASSIGN(FlightInfo merged, MergeInfos("t", std::move(one)));
  EXPECT_TRUE(merged.ordered);
  EXPECT_EQ(merged.total_records, 7);
  EXPECT_EQ(merged.total_bytes, -1);
  EXPECT_EQ(merged.endpoints[0].locations, std::vector<std::string>{"grpc://b:1"});
}

// A flight's schema in the IPC form: two columns, and the key-value metadata given.
std::string Encoded(const std::vector<std::pair<std::string, std::string>>& metadata,
                    const std::string& second = "s") {
  Field f = Field::Make("+s", "", {Field::Make("l", "x"), Field::Make("u", second)}).WithFlags(0);
  f.metadata = metadata;
  Result<UniqueSchema> schema = f.Export();
  EXPECT_TRUE(schema.ok());
  Result<std::string> bytes = EncodeSchema(schema->get());
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::string();
}

TEST(MergeInfos, TheSameSchemaInOtherBytesMerges) {
  const std::string ours = Encoded({{"a", "1"}, {"b", "2"}});
  // Another writer may list the metadata in another order: other bytes, the same schema.
  const std::string theirs = Encoded({{"b", "2"}, {"a", "1"}});
  ASSERT_NE(ours, theirs);
  std::vector<OwnedInfo> answers;
  answers.push_back({"", Info(ours, {{"own", {}, {}}}, 1, 8)});
  answers.push_back({"grpc://b:1", Info(theirs, {{"peer", {}, {}}}, 1, 8)});
  ASSERT_OK_AND_ASSIGN(FlightInfo merged, MergeInfos("t", std::move(answers)));
  EXPECT_EQ(merged.schema, ours);
  EXPECT_EQ(merged.endpoints.size(), 2u);
}

TEST(MergeInfos, ADifferentSchemaOrNoServerIsRefused) {
  for (const std::string& other : {Encoded({}, "renamed"), Encoded({{"a", "other"}})}) {
    std::vector<OwnedInfo> answers;
    answers.push_back({"", Info(Encoded({{"a", "1"}}), {}, 0, 0)});
    answers.push_back({"grpc://b:1", Info(other, {}, 0, 0)});
    // Metadata counts too: the merged flight has one schema for every server's endpoints.
    ASSERT_RAISES_WITH(StatusCode::kFailedPrecondition,
                       "grpc://b:1 serves flight \"t\" with another schema than this server",
                       MergeInfos("t", std::move(answers)));
  }
  std::vector<OwnedInfo> garbled;
  garbled.push_back({"", Info(Encoded({}), {}, 0, 0)});
  garbled.push_back({"grpc://b:1", Info("T", {}, 0, 0)});
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "grpc://b:1's flight \"t\"",
                     MergeInfos("t", std::move(garbled)));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no flight named \"t\" on this server or its peers",
                     MergeInfos("t", {}));
}

TEST(Federation, APeerDownFailsNamingItOrIsNamedWithAllowPartial) {
  // Port 1 on loopback: nothing listens, so the connection is refused at once.
  ServerOptions options;
  options.peers = {"grpc://127.0.0.1:1"};
  options.peer_timeout = std::chrono::milliseconds(500);
  Federation strict(options);
  ASSERT_RAISES_WITH(StatusCode::kUnavailable, "peer grpc://127.0.0.1:1 is unavailable",
                     strict.Info("t", Status(StatusCode::kNotFound, "none here"), ""));
  options.allow_partial = true;
  Federation partial(options);
  ASSERT_OK_AND_ASSIGN(FlightInfo info,
                       partial.Info("t", Info("S", {{"own", {kReuseConnection}, {}}}, 1, 8), ""));
  EXPECT_EQ(info.endpoints.size(), 1u);
  const nlohmann::json note = nlohmann::json::parse(info.app_metadata);
  EXPECT_EQ(note["missing_peers"][0]["peer"], "grpc://127.0.0.1:1");
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "missing",
                     partial.Info("t", Status(StatusCode::kNotFound, "none here"), ""));
  ASSERT_OK_AND_ASSIGN(std::vector<FlightInfo> listed, partial.List({}, ""));
  EXPECT_TRUE(listed.empty());
}

}  // namespace
}  // namespace ferry::flight::internal

namespace ferry::flight::internal {
namespace {

using namespace std::chrono_literals;

// `rows` int64 values in column "x" as one batch of a flight.
Status AddFlight(Server& server, const std::string& name, int rows) {
  nlohmann::json values = nlohmann::json::array();
  for (int i = 0; i < rows; ++i) values.push_back({{"x", i}});
  FERRY_ASSIGN_OR_RAISE(
      Array a, testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x")}), values.dump()));
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  batches.push_back(testing::ToCpuDeviceArray(std::move(a), &schema));
  return server.Add(name, std::move(schema), std::move(batches));
}

// Many callers at once against three peers: every question is asked on the pool's threads, none
// outlives the federation, and every answer is the peers' own answers merged. Threads are told
// apart by name: a thread bears the name of the thread that starts it until it names itself (gRPC
// names its own), so one started per question would show as a "fed-caller" or "ferry-peers" that
// is neither a caller nor one of the pool's threads, and never bears another name.
TEST(Federation, ManyConcurrentQuestionsRunOnThePoolOnly) {
  constexpr int kPeers = 3;
  std::vector<std::unique_ptr<Server>> peers;
  ServerOptions options;
  for (int p = 0; p < kPeers; ++p) {
    ServerOptions peer_options;
    peer_options.planes = {};
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> peer, Server::Start(peer_options));
    ASSERT_OK(AddFlight(*peer, "shared", (p + 1) * 10));
    ASSERT_OK(AddFlight(*peer, "own-" + std::to_string(p), p + 1));
    options.peers.push_back(peer->uri());
    peers.push_back(std::move(peer));
  }
  // The oracle: each peer's own list, asked directly.
  std::map<std::string, int64_t> records;
  std::map<std::string, std::vector<std::string>> owners;
  for (int p = 0; p < kPeers; ++p) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> client, Client::Connect(options.peers[p]));
    ASSERT_OK_AND_ASSIGN(std::vector<FlightInfo> own, client->ListFlights());
    for (const FlightInfo& info : own) {
      records[info.path[0]] += info.total_records;
      owners[info.path[0]].push_back(options.peers[p]);
    }
  }
  // By hand: 10 + 20 + 30 rows of "shared", one endpoint per peer in the peers' order.
  EXPECT_EQ(records["shared"], 60);
  EXPECT_EQ(owners["shared"], options.peers);
  EXPECT_EQ(records.size(), 4u);

  options.peer_timeout = 30s;
  auto federation = std::make_unique<Federation>(options);
  EXPECT_EQ(federation->threads(), Federation::kThreadsPerPeer * kPeers);
  // The pool's threads, all started and named with it. gRPC's threads that they start later bear
  // the name until they rename themselves, so the pool is told apart by id.
  const std::set<int> pool = testing::ThreadIdsNamed("ferry-peers");
  EXPECT_EQ(pool.size(), federation->threads());
  constexpr int kCallers = 24;
  constexpr int kRounds = 4;
  std::atomic<int> callers_done{0};
  std::atomic<int> right{0};
  std::mutex mutex;
  std::set<int> caller_ids;
  std::map<int, std::set<std::string>> seen;  // every thread sampled, with each name it bore
  auto sample = [&] {
    const std::map<int, std::string> now = testing::ThreadNames();
    std::lock_guard lock(mutex);
    for (const auto& [tid, name] : now) seen[tid].insert(name);
  };
  std::thread sampler([&] {
    while (callers_done.load() < kCallers) {
      sample();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&] {
      pthread_setname_np(pthread_self(), "fed-caller");
      {
        std::lock_guard lock(mutex);
        caller_ids.insert(static_cast<int>(gettid()));
      }
      for (int r = 0; r < kRounds; ++r) {
        Result<std::vector<FlightInfo>> listed = federation->List({}, "");
        if (!listed.ok()) {
          ADD_FAILURE() << listed.status().message();
          continue;
        }
        bool ok = listed->size() == records.size();
        for (const FlightInfo& info : *listed) {
          const std::string& path = info.path.at(0);
          ok = ok && info.total_records == records[path] &&
               info.endpoints.size() == owners[path].size();
          for (size_t e = 0; ok && e < info.endpoints.size(); ++e) {
            const std::vector<std::string>& at = info.endpoints[e].locations;
            ok = std::find(at.begin(), at.end(), owners[path][e]) != at.end();
          }
        }
        if (ok) ++right;
      }
      ++callers_done;
    });
  }
  for (std::thread& t : callers) t.join();
  sampler.join();
  sample();  // gRPC's threads caught before they named themselves bear their own names by now
  EXPECT_EQ(right.load(), kCallers * kRounds);
  // Threads that bore `name` and no other, beyond the `known` ones.
  auto strays = [&](const std::string& name, const std::set<int>& known) {
    std::vector<int> out;
    for (const auto& [tid, names] : seen) {
      if (names == std::set<std::string>{name} && known.count(tid) == 0) out.push_back(tid);
    }
    return out;
  };
  EXPECT_EQ(strays("fed-caller", caller_ids), std::vector<int>{});
  EXPECT_EQ(strays("ferry-peers", pool), std::vector<int>{});
  for (int tid : pool) EXPECT_EQ(seen[tid], std::set<std::string>{"ferry-peers"});
  federation.reset();
  EXPECT_EQ(testing::ThreadsAlive(pool), std::set<int>{});
}

// A peer that takes the connection and never answers (a listening socket nobody accepts on):
// the question ends when the clock reaches the peer timeout, not a tick before, naming the peer.
TEST(Federation, AStalledPeerIsUnavailableAtThePeerTimeoutByTheClock) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 16), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string peer = "grpc://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  auto clock = std::make_shared<ManualClock>();
  ServerOptions options;
  options.peers = {peer};
  options.peer_timeout = 30s;
  options.clock = clock;
  auto federation = std::make_unique<Federation>(options);
  const std::set<int> pool = testing::ThreadIdsNamed("ferry-peers");
  EXPECT_EQ(pool.size(), federation->threads());
  Result<FlightInfo> got = Status::Invalid("not asked");
  std::thread asker([&] { got = federation->Info("t", Status::NotFound("none here"), ""); });
  // Asked: the question waits on the clock, and the peer has the connection.
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s));
  pollfd pending{listener, POLLIN, 0};
  ASSERT_EQ(poll(&pending, 1, 10000), 1);
  clock->Advance(30s - Clock::duration(1));
  EXPECT_EQ(clock->waiters(), 1);  // still waiting for the peer
  clock->Advance(Clock::duration(1));
  asker.join();
  ASSERT_RAISES_WITH(StatusCode::kUnavailable,
                     "peer " + peer +
                         " is unavailable (asked with a 30000 ms limit): no answer "
                         "within 30000 ms",
                     got);
  // Closing the socket resets the connection: the call still in flight fails, and the pool's
  // thread with it, so the federation's threads are joined at once.
  close(listener);
  federation.reset();
  EXPECT_EQ(testing::ThreadsAlive(pool), std::set<int>{});
}

}  // namespace
}  // namespace ferry::flight::internal
