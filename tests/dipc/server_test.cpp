// Server and client together, on every transport and both body types: every Arrow type round
// trips, type-1 bodies are read in place, memory in flight stays bounded,
// and bad tickets, dead peers and disconnects end in clear errors with nothing held
// (free_data: freer_test.cpp).
#include "ferry/dipc/server.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "dipc/server_client.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/dipc/client.hpp"

namespace ferry::dipc {
namespace {

using namespace std::chrono_literals;
using namespace ferry::transport;
using Json = nlohmann::json;

using testing::IntBatches;
using testing::IntData;

// One batch with a column of every type, through one stream: a stream per type cost a
// connection each, seconds per shape over UCX.
TEST_P(ServerClient, EveryTypeRoundTrips) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  const auto& cases = testing::TypeCases();
  std::vector<size_t> types(cases.size());
  for (size_t t = 0; t < cases.size(); ++t) types[t] = t;
  ASSERT_OK_AND_ASSIGN(Made made, MakeBatch(types, 120, 7));
  std::vector<UniqueDeviceArray> batches;
  batches.push_back(std::move(made.batch));
  ASSERT_OK_AND_ASSIGN(auto dataset,
                       Dataset::FromBatches(std::move(made.schema), std::move(batches)));
  server->Add("every", dataset);
  std::vector<Json> got;
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "every"));
    EXPECT_EQ(s->device_type, ARROW_DEVICE_CPU);
    ASSERT_OK_AND_ASSIGN(got, testing::DrainToJson(s.get()));
  }  // closed here: the session returns its loans
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), made.expected.size());
  ASSERT_EQ(made.expected[0].size(), cases.size());  // a column for every type
  for (size_t t = 0; t < cases.size(); ++t) {
    SCOPED_TRACE(cases[t].name);
    const std::string column = ColumnName(t, true);
    for (size_t row = 0; row < made.expected.size(); ++row) {
      ASSERT_EQ(got[0][row][column], made.expected[row][column]) << "row " << row;
    }
  }
  // The session freed what its client held before it ended.
  EXPECT_TRUE(server->AwaitIdle(5s));
  EXPECT_EQ(server->stats().bytes_in_flight, 0);
  EXPECT_EQ(server->stats().sessions_failed, 0) << server->last_error();
  EXPECT_EQ(server->stats().batches_sent, 1);
}

TEST_P(ServerClient, BatchesLandOnEveryDevice) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(2, 1000));
  server->Add("t", data.dataset);
  for (const testing::DeviceCase& dc : testing::ConformanceDevices()) {
    SCOPED_TRACE(dc.name);
    Result<Device*> device = testing::ResolveForTest(dc);
    if (!device.ok()) {
      EXPECT_FALSE(testing::DeviceRequired(dc)) << device.status().message();
      continue;  // reported by the device suites; this machine lacks it
    }
    ClientOptions options;
    options.device = *device;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t", options));
    EXPECT_EQ(s->device_type, (*device)->device_type());
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, data.expected);
  }
}

// The sizes of this process's shared-memory segments (memfds named ferry-segment), split by
// whether the kernel has them sealed against writes.
struct SegmentSeals {
  std::vector<int64_t> sealed, unsealed;
};
SegmentSeals SegmentsOfThisProcess() {
  SegmentSeals out;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    const std::string fd_path = std::string("/proc/self/fd/") + e->d_name;
    char target[256] = {};
    const ssize_t n = readlink(fd_path.c_str(), target, sizeof(target) - 1);
    if (n <= 0 || std::string(target).rfind("/memfd:ferry-segment", 0) != 0) continue;
    const int fd = std::atoi(e->d_name);
    struct stat st {};
    const int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) != 0 || seals < 0) continue;
    ((seals & F_SEAL_WRITE) != 0 ? out.sealed : out.unsealed).push_back(st.st_size);
  }
  closedir(dir);
  return out;
}

// A kept dataset is written into a region of its own once; every client borrows the same bytes
// (type 1) or gets each packed body sent whole from them (type 0). Over shared memory its
// segment is sealed against writes (its clients map its pages ahead of their reads), and the
// server's shared region, which it writes as it serves, is not.
TEST_P(ServerClient, KeptDatasetsAreLentWithoutCopies) {
  ServerOptions options;
  options.region_bytes = 64 << 10;  // far smaller than the dataset: kept bodies do not use it
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(20, 5000));  // 800 KB of int64
  ASSERT_OK(server->Keep("k", data.dataset));
  const auto& cases = testing::TypeCases();
  ASSERT_OK_AND_ASSIGN(Made strings, MakeBatch(cases.size() - 1, 300, 11));
  Json strings_expected = strings.expected;
  std::vector<UniqueDeviceArray> batches;
  batches.push_back(std::move(strings.batch));
  ASSERT_OK_AND_ASSIGN(auto d, Dataset::FromBatches(std::move(strings.schema), std::move(batches)));
  ASSERT_OK(server->Keep("last-type", d));
  if (shape_.transport == "shm") {
    const SegmentSeals seals = SegmentsOfThisProcess();
    // The two kept regions (none when packed bodies keep them in plain memory), the first
    // holding 800 KB of int64; unsealed, only the 64 KiB shared region, where it is made.
    if (shape_.body == BodyType::kPacked) {
      EXPECT_TRUE(seals.sealed.empty());
    } else {
      ASSERT_EQ(seals.sealed.size(), 2u);
      EXPECT_GE(std::max(seals.sealed[0], seals.sealed[1]), 20 * 5000 * 8);
    }
    for (int64_t size : seals.unsealed) EXPECT_EQ(size, 64 << 10);
  }
  // Two clients at once, each holding all its batches: both read the same kept bytes.
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream a, Open(*server, "k"));
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream b, Open(*server, "k"));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got_a, testing::DrainToJson(a.get()));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got_b, testing::DrainToJson(b.get()));
  EXPECT_EQ(got_a, data.expected);
  EXPECT_EQ(got_b, data.expected);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream c, Open(*server, "last-type"));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got_c, testing::DrainToJson(c.get()));
  ASSERT_EQ(got_c.size(), 1u);
  EXPECT_EQ(got_c[0], strings_expected);
  EXPECT_EQ(server->stats().bytes_in_flight, 0);  // the shared region was never used
  a.reset();
  b.reset();
  c.reset();
  EXPECT_TRUE(server->AwaitIdle(5s));
  const ServerStats stats = server->stats();
  EXPECT_EQ(stats.sessions_failed, 0) << server->last_error();
  // 20 batches of 5,000 int64 twice, and one batch of the last type: each sent or lent once.
  EXPECT_EQ(stats.batches_sent, 41);
  EXPECT_GE(stats.body_bytes_sent, 2 * 20 * 5000 * 8);
  if (shape_.body == BodyType::kPacked) {
    EXPECT_EQ(stats.addresses_lent, 0);  // sent whole, nothing lent
  } else {
    EXPECT_GT(stats.addresses_lent, 0);
  }
}

// Every thread the server and client start bears a name of ferry's (top, perf and a debugger
// tell them apart; an unnamed one would bear the name of the thread that started it).
TEST_P(ServerClient, EveryThreadItStartsIsNamed) {
  const std::map<int, std::string> before = testing::ThreadNames();
  const std::string test_thread = before.at(static_cast<int>(getpid()));
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(3, 100));
  ASSERT_OK(server->Keep("k", data.dataset));
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream stream, Open(*server, "k"));
  UniqueDeviceArray first;
  ASSERT_OK(StreamGetNext(stream.get(), first.get()));  // a session serves it now
  ASSERT_TRUE(first.valid());
  std::map<std::string, int> started;  // name to count, of the threads started since `before`
  for (const auto& [tid, name] : testing::ThreadNames()) {
    if (!before.contains(tid)) ++started[name];
  }
  EXPECT_FALSE(started.contains(test_thread)) << "a thread was started unnamed";
  EXPECT_EQ(started["ferry-accept"], 1);
  // A session per connection (the split shape's client makes two), each with its free_data reader.
  const int sessions = shape_.split ? 2 : 1;
  EXPECT_EQ(started["ferry-session"], sessions);
  EXPECT_EQ(started["ferry-frees"], sessions);
  if (shape_.transport == "shm") {
    EXPECT_GE(started["ferry-shm-read"], 2);  // a connection's reader on each side
  } else {
    EXPECT_GE(started["ferry-ucx"], 2);  // a worker's progress thread on each side
  }
  for (const auto& [name, count] : started) {
    // UCX's own threads (its "async" event thread) are UCX's to name.
    if (name.rfind("ferry-", 0) != 0) {
      EXPECT_EQ(shape_.transport, "ucx") << name;
    }
  }
}

TEST_P(ServerClient, TypeOneBodiesAreReadInPlace) {
  if (shape_.transport != "shm" || shape_.body != BodyType::kBufferList) {
    GTEST_SKIP() << "only shared memory with body type 1 reads the server's memory in place";
  }
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(1, 4096));
  server->Add("t", data.dataset);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t"));
  UniqueDeviceArray a;
  ASSERT_EQ(s->get_next(s.get(), a.get()), 0);
  ASSERT_TRUE(a.valid());
  // Every non-NULL buffer must lie inside a read-only mapping of the server's memfd segment.
  std::vector<const void*> buffers;
  testing::CollectBuffers(&a->array, &buffers);
  std::ifstream maps("/proc/self/maps");
  std::vector<std::pair<uintptr_t, uintptr_t>> segments;
  for (std::string line; std::getline(maps, line);) {
    // The server lives in this process too: its mapping is the writable one.
    if (line.find("memfd:ferry-segment") == std::string::npos) continue;
    if (line.substr(line.find(' ') + 1, 4) != "r--s") continue;
    uintptr_t lo = 0;
    uintptr_t hi = 0;
    std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi);
    segments.emplace_back(lo, hi);
  }
  ASSERT_FALSE(segments.empty()) << "no read-only memfd segment is mapped";
  int in_place = 0;
  for (const void* p : buffers) {
    if (p == nullptr) continue;
    const auto at = reinterpret_cast<uintptr_t>(p);
    for (auto [lo, hi] : segments) in_place += (at >= lo && at < hi) ? 1 : 0;
  }
  EXPECT_EQ(in_place, 1);  // the int64 values (no validity bitmap: no nulls)
  // Held batches keep their blocks; releasing them sends free_data.
  EXPECT_GT(server->stats().bytes_in_flight, 0);
  a.reset();
  s.reset();
  EXPECT_TRUE(server->AwaitIdle(5s));
  EXPECT_EQ(server->stats().bytes_in_flight, 0);
}

// 40 batches of about 32 KiB through a 256 KiB region: the server must wait for free_data, and
// the memory in flight never exceeds the region.
TEST_P(ServerClient, MemoryInFlightStaysBounded) {
  if (shape_.body != BodyType::kBufferList) GTEST_SKIP() << "packed bodies use no region";
  ServerOptions options;
  options.region_bytes = 256 << 10;
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(40, 4000));
  server->Add("big", data.dataset);
  const std::vector<Json>& expected = data.expected;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "big"));
  UniqueSchema got_schema;
  ASSERT_EQ(s->get_schema(s.get(), got_schema.get()), 0);
  std::deque<UniqueDeviceArray> held;
  int64_t peak = 0;
  for (int b = 0; b < 40; ++b) {
    UniqueDeviceArray a;
    ASSERT_EQ(s->get_next(s.get(), a.get()), 0) << s->get_last_error(s.get());
    ASSERT_TRUE(a.valid());
    EXPECT_EQ(Json::parse(testing::DeviceArrayToJson(got_schema.get(), a.get())), expected[b]);
    held.push_back(std::move(a));
    if (held.size() > 4) held.pop_front();  // a consumer that keeps the last four batches
    peak = std::max(peak, server->stats().bytes_in_flight);
  }
  UniqueDeviceArray end;
  ASSERT_EQ(s->get_next(s.get(), end.get()), 0);
  EXPECT_FALSE(end.valid());
  EXPECT_LE(peak, options.region_bytes);
  held.clear();
  s.reset();
  EXPECT_TRUE(server->AwaitIdle(5s));
  EXPECT_EQ(server->stats().bytes_in_flight, 0);
  EXPECT_EQ(server->stats().sessions_failed, 0) << server->last_error();
}

TEST_P(ServerClient, AClientThatNeverFreesMakesTheServerWaitThenFail) {
  if (shape_.body != BodyType::kBufferList) GTEST_SKIP() << "packed bodies use no region";
  if (shape_.transport != "shm") {
    GTEST_SKIP() << "only shared memory lends bodies: UCX gets copy them and free at once";
  }
  auto clock = std::make_shared<ManualClock>();
  ServerOptions options;
  options.region_bytes = 64 << 10;
  options.timeout = 300ms;
  options.clock = clock;
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(8, 4000));
  server->Add("big", data.dataset);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "big"));
  // The session's one wait on the clock is for room in the full region (in the split shape the
  // metadata session's wait for the end is the other): the timeout is passed once it waits,
  // with no time spent.
  std::thread timer([&] {
    if (clock->AwaitWaiters(shape_.split ? 2 : 1, 10s)) clock->Advance(300ms);
  });
  std::vector<UniqueDeviceArray> held;
  int rc = 0;
  while (rc == 0) {
    UniqueDeviceArray a;
    rc = s->get_next(s.get(), a.get());
    if (rc == 0 && !a.valid()) break;
    if (rc == 0) held.push_back(std::move(a));
  }
  timer.join();
  ASSERT_NE(rc, 0) << "the stream ended although the client freed nothing";
  EXPECT_THAT(s->get_last_error(s.get()),
              ::testing::AllOf(::testing::HasSubstr("no room for a body of "),
                               ::testing::HasSubstr("in the shared region within 300 ms")));
  EXPECT_LE(server->stats().bytes_in_flight, options.region_bytes);
  EXPECT_TRUE(server->AwaitIdle(5s));
  EXPECT_EQ(server->stats().bytes_in_flight, 0);
  EXPECT_EQ(server->stats().sessions_failed, 1);
}

// A client that hangs up while the server waits for room in a full region ends its session at
// once: the wait is the server's backpressure on a reader, and a reader that is gone frees its
// loans by leaving. The clock never moves, so only the hang-up can end the wait.
TEST_P(ServerClient, AClientThatHangsUpEndsTheWaitForRoom) {
  if (shape_.body != BodyType::kBufferList) GTEST_SKIP() << "packed bodies use no region";
  if (shape_.transport != "shm") {
    GTEST_SKIP() << "only shared memory lends bodies: UCX gets copy them and free at once";
  }
  auto clock = std::make_shared<ManualClock>();
  ServerOptions options;
  options.region_bytes = 64 << 10;
  options.timeout = 30s;
  options.clock = clock;
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(8, 4000));
  server->Add("big", data.dataset);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "big"));
  ASSERT_TRUE(clock->AwaitWaiters(shape_.split ? 2 : 1, 10s))
      << "the server never filled the region";
  EXPECT_GT(server->stats().bytes_in_flight, 0);
  s.reset();
  EXPECT_TRUE(server->AwaitIdle(5s)) << "the session still waits for room for a client that left";
  EXPECT_EQ(server->stats().bytes_in_flight, 0);
}

TEST_P(ServerClient, AnUnknownTicketIsRefusedByName) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(Made made, MakeBatch(0, 10, 0));
  ASSERT_OK_AND_ASSIGN(auto d, Dataset::FromBatches(std::move(made.schema), {}));
  server->Add("alpha", d);
  // The server's URIs carry ferry=1: the client asks for ferry's extensions and gets the
  // server's words.
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket \"beta\" (this server has: alpha)",
                     Open(*server, "beta"));
  // In the split shape both servers (here one) refuse it, unless the client hung up first; a
  // refusal is counted before its session ends.
  EXPECT_TRUE(server->AwaitIdle(5s));
  EXPECT_GE(server->stats().tickets_refused, 1);
  EXPECT_EQ(server->stats().sessions_failed, 0);
}

// A server started closed (accept false) takes no one until Open, so a client that comes while
// it is being filled waits and then reads, rather than being told the dataset is unknown.
// (tests/cli/test_get.py starts `ferry serve` under a client already retrying its connect.)
TEST_P(ServerClient, AServerFilledBeforeItOpensServesAClientThatCameEarly) {
  ServerOptions options;
  options.accept = false;
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  Result<UniqueDeviceArrayStream> early = Status::Internal("not read");
  int64_t rows = 0;
  std::thread client([&] {
    ClientOptions o;
    o.timeout = 20s;
    early = Open(*server, "alpha", o);
    if (!early.ok()) return;
    while (true) {
      UniqueDeviceArray b;
      if (!StreamGetNext(early->get(), b.get()).ok() || !b.valid()) return;
      rows += b->array.length;
    }
  });
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(3, 100, /*with_expected=*/false));
  server->Add("alpha", data.dataset);
  EXPECT_EQ(server->stats().clients_accepted, 0);
  server->Open();
  server->Open();  // a second call changes nothing
  client.join();
  ASSERT_OK(early.status());
  EXPECT_EQ(rows, 300);
  EXPECT_EQ(server->stats().tickets_refused, 0);
}

// A client that gave up before the server opened (its connection waiting to be taken) holds
// nothing once the server opens: its session ends at once, a client after it is served, and the
// server is idle again well within its own 30 s timeout.
TEST_P(ServerClient, AClientThatLeftBeforeTheServerOpenedHoldsNothing) {
  ServerOptions options;
  options.accept = false;
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  auto clock = std::make_shared<ManualClock>();
  Result<UniqueDeviceArrayStream> gone = Status::Internal("not tried");
  std::thread client([&] {
    ClientOptions o;
    o.clock = clock;
    o.timeout = 1s;
    gone = Open(*server, "alpha", o);
    while (gone.ok()) {  // the stream may open before the server speaks; its reads then fail
      UniqueDeviceArray b;
      Status st = StreamGetNext(gone->get(), b.get());
      if (!st.ok()) gone = st;
      if (st.ok() && !b.valid()) break;
    }
  });
  // The client's one wait on its clock is for the server's answer: it gives up once that wait
  // has passed its timeout, with no time spent.
  ASSERT_TRUE(clock->AwaitWaiters(1, 10s)) << "the client never waited on its clock";
  clock->Advance(1s);
  client.join();
  EXPECT_FALSE(gone.ok()) << "the client read a stream the server never served";
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(3, 100, /*with_expected=*/false));
  server->Add("alpha", data.dataset);
  server->Open();
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream late, Open(*server, "alpha"));
  int64_t rows = 0;
  while (true) {
    UniqueDeviceArray b;
    ASSERT_OK(StreamGetNext(late.get(), b.get()));
    if (!b.valid()) break;
    rows += b->array.length;
  }
  EXPECT_EQ(rows, 300);
  late.reset();
  EXPECT_TRUE(server->AwaitIdle(5s)) << "a session outlived its client";
  const ServerStats st = server->stats();
  EXPECT_EQ(st.clients_active, 0);
  EXPECT_EQ(st.bytes_in_flight, 0);
  // The late client was taken (the split shapes take two connections a client). The one that
  // left was taken too where its connection reached the listener before it gave up: over UCX
  // it closes a connection still wiring up by force at once, which can be before the server
  // heard of it; either way it holds nothing (above).
  EXPECT_GE(st.clients_accepted, shape_.split ? 2 : 1);
}

// Without ferry=1 the wire is the bare protocol: the refusal is a closed connection.
TEST_P(ServerClient, WithoutExtensionsARefusalIsAClosedConnection) {
  if (shape_.transport != "ucx") GTEST_SKIP() << "the shm scheme is ferry's own";
  auto server = StartServer();
  ASSERT_TRUE(server);
  Uri uri = server->uri("beta");
  uri.ferry = false;
  // A wait that ran out would fail as a deadline instead: the error says the close was seen.
  ClientOptions options;
  options.timeout = 60s;
  ASSERT_RAISES_WITH(
      StatusCode::kUnavailable,
      "the server closed the connection after want_data (unknown or expired ticket?)",
      ConnectStream(uri, "beta", options));
}

// A kept dataset's memory has its own remote_handle, so its own URI: asked for under the shared
// region's URI it is refused rather than read with the wrong key.
TEST_P(ServerClient, AKeptDatasetIsServedOnlyUnderItsOwnUri) {
  if (shape_.body != BodyType::kBufferList || shape_.split) GTEST_SKIP() << "kept: type 1";
  auto server = StartServer();
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(2, 100));
  ASSERT_OK(server->Keep("k", data.dataset));
  // (Over TCP, UCX 1.13 emulates RMA and its packed keys carry no address: two regions' keys
  // may be equal. The want_data tag is what tells the server which memory the client means.)
  EXPECT_NE(server->uri("k").want_data, server->uri().want_data);
  ASSERT_RAISES_WITH(StatusCode::kFailedPrecondition, "served under another URI",
                     ConnectStream(server->uri(), "k"));
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("k"), "k"));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
  EXPECT_EQ(got, data.expected);
}

TEST_P(ServerClient, ADisconnectMidStreamFreesEverything) {
  ServerOptions options;
  options.region_bytes = 1 << 20;
  auto server = StartServer(options);
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(30, 2000));
  server->Add("t", data.dataset);
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t"));
    UniqueDeviceArray a;
    ASSERT_EQ(s->get_next(s.get(), a.get()), 0);
    ASSERT_TRUE(a.valid());
    // Mid-stream the client is being served (the split shape by two sessions): not idle.
    EXPECT_FALSE(server->AwaitIdle(0ms));  // a look, no wait
    EXPECT_EQ(server->stats().clients_active, shape_.split ? 2 : 1);
  }  // the batch, then the stream and its connection go
  EXPECT_TRUE(server->AwaitIdle(5s));
  // A session frees what its client held before it ends.
  EXPECT_EQ(server->stats().clients_active, 0);
  EXPECT_EQ(server->stats().bytes_in_flight, 0);
}

TEST_P(ServerClient, AStoppedServerGivesTheClientAClearError) {
  // A small region (type 1) or the socket's buffer (packed) keeps the server from finishing.
  ServerOptions server_options;
  server_options.region_bytes = 64 << 10;
  auto server = StartServer(server_options);
  ASSERT_TRUE(server);
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(200, 2000, /*with_expected=*/false));
  server->Add("t", data.dataset);
  ClientOptions options;
  options.timeout = 2s;
  // Only the stop is timed by the 2 s: a UCX wire-up on a loaded machine may take longer.
  options.connect_timeout = ferry::testing::kUcxWireUp;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, Open(*server, "t", options));
  UniqueDeviceArray first;
  ASSERT_EQ(s->get_next(s.get(), first.get()), 0);
  server->Stop();
  int rc = 0;
  int batches = 1;
  for (int i = 0; i < 300 && rc == 0; ++i) {
    UniqueDeviceArray a;
    rc = s->get_next(s.get(), a.get());
    if (rc == 0 && !a.valid()) break;
    batches += rc == 0 ? 1 : 0;
  }
  if (rc == 0) {
    // Everything had arrived before the stop (UCX receives eagerly): whole, never truncated.
    EXPECT_EQ(batches, 200);
    return;
  }
  // Over UCX a get from the dead server's memory may be what notices first; and a session that
  // was waiting for room in the region when the stop came tells the client so before closing.
  EXPECT_THAT(s->get_last_error(s.get()),
              ::testing::AnyOf(::testing::HasSubstr("closed the connection"),
                               ::testing::HasSubstr("UCX get"),
                               ::testing::HasSubstr("the server reported: the allocation was "
                                                    "cancelled")));
}

INSTANTIATE_TEST_SUITE_P(AllShapes, ServerClient, ::testing::Range<size_t>(0, Shapes().size()),
                         [](const ::testing::TestParamInfo<size_t>& p) {
                           return Shapes()[p.param].name;
                         });

}  // namespace
}  // namespace ferry::dipc
