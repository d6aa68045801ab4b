// The client against a scripted, lying server: malformed metadata, unknown body types, reserved
// tag bits, missing and duplicate sequence numbers, pairs outside the shared segment and lying
// lengths each end the stream with an error naming what was wrong, and never crash. The client
// is timed by a ManualClock: a timeout is seen by moving it, and no test waits for one.
#include "ferry/dipc/client.hpp"

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "ferry/dipc/server.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry/transport/shm.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/clock_util.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::dipc {
namespace {

using namespace std::chrono_literals;
using namespace ferry::transport;
using ferry::testing::AtTheDeadline;
using Json = nlohmann::json;

// Messages as a real writer encodes them: metadata flatbuffers and packed bodies.
struct Recorded {
  std::vector<uint8_t> metadata;
  std::vector<uint8_t> body;
  std::vector<ipc::BodyBuffer> buffers;  // offsets into `body`
  bool has_body = false;
};

class RecordingSink final : public ipc::MessageSink {
 public:
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    Recorded r;
    r.metadata.assign(m.metadata.begin(), m.metadata.end());
    for (const ByteSpan& p : m.body) {
      const auto* b = static_cast<const uint8_t*>(p.data);
      r.body.insert(r.body.end(), b, b + p.size);
    }
    r.buffers.assign(m.buffers.begin(), m.buffers.end());
    r.has_body = m.has_body;
    messages.push_back(std::move(r));
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  std::vector<Recorded> messages;
};

// A schema message and one batch message of [1, 2, 3] int64.
std::vector<Recorded> RecordStream() {
  auto batch = testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x")}),
                                      R"([{"x": 1}, {"x": 2}, {"x": 3}])");
  EXPECT_TRUE(batch.ok());
  RecordingSink sink;
  auto writer = ipc::StreamWriter::Open(&sink, batch->schema());
  EXPECT_TRUE(writer.ok());
  EXPECT_TRUE(writer->WriteBatch(batch->array()).ok());
  EXPECT_TRUE(writer->Close().ok());
  return sink.messages;
}

Status SendMetadata(Connection& c, MetadataType type, uint32_t seq,
                    const std::vector<uint8_t>& fb) {
  uint8_t header[kMetadataHeaderSize];
  EncodeMetadataHeader(type, seq, header);
  const ByteSpan pieces[] = {{header, kMetadataHeaderSize},
                             {fb.data(), static_cast<int64_t>(fb.size())}};
  return c.Send(pieces);
}

Status SendBody(Connection& c, uint64_t tag, const std::vector<uint8_t>& body) {
  const ByteSpan piece{body.data(), static_cast<int64_t>(body.size())};
  return c.SendTagged(tag, {&piece, 1});
}

// A scripted send: the client may already have hung up on an earlier lie.
#define SEND(expr)                                                                          \
  do {                                                                                      \
    const ::ferry::Status _sent = (expr);                                                   \
    EXPECT_TRUE(_sent.ok() || _sent.code() == StatusCode::kUnavailable) << _sent.message(); \
  } while (false)

// A server that follows `script` for its one client, then waits for the client to hang up.
class ScriptedServer {
 public:
  using Script = std::function<void(Connection&, Listener&)>;
  explicit ScriptedServer(Script script) {
    auto l = ListenShm("");
    EXPECT_TRUE(l.ok());
    listener_ = std::move(*l);
    thread_ = std::thread([this, script = std::move(script)] {
      auto c = listener_->Accept(5s);
      if (!c.ok()) return;
      if (!(*c)->ReceiveTagged(kDefaultWantDataTag, ~uint64_t{0}, 5s).ok()) return;
      script(**c, *listener_);
      (void)(*c)->Receive(5s);  // until the client goes
    });
  }
  ~ScriptedServer() {
    thread_.join();
    listener_->Close();
  }
  Uri uri() const {
    Uri u;
    u.scheme = "shm";
    u.authority = listener_->address();
    u.want_data = kDefaultWantDataTag;
    u.free_data = kDefaultFreeDataTag;
    return u;
  }

 private:
  std::unique_ptr<Listener> listener_;
  std::thread thread_;
};

// A client of a scripted server: its timeouts are on `clock` (one nobody moves by default, so
// these tests see every lie before any timeout).
ClientOptions Timed(std::shared_ptr<Clock> clock = std::make_shared<ManualClock>()) {
  ClientOptions options;
  options.timeout = 500ms;
  options.clock = std::move(clock);
  return options;
}

// Read `stream` until it ends or fails; the error text.
std::string ReadRest(ArrowDeviceArrayStream* s) {
  while (true) {
    UniqueDeviceArray a;
    if (s->get_next(s, a.get()) != 0) return s->get_last_error(s);
    if (!a.valid()) return "";
  }
}

// Connect to a scripted server and read until the stream ends or fails; the error text.
std::string ReadAll(const ScriptedServer& server) {
  auto stream = ConnectStream(server.uri(), "t", Timed());
  if (!stream.ok()) return stream.status().message();
  return ReadRest(stream->get());
}

TEST(ClientAgainstABadServer, AWellFormedStreamReadsBack) {
  const std::vector<Recorded> m = RecordStream();
  ScriptedServer server([&](Connection& c, Listener&) {
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 1, m[1].metadata));
    SEND(SendBody(c, MakeBodyTag(BodyType::kPacked, 1), m[1].body));
    SEND(SendMetadata(c, MetadataType::kEndOfStream, 2, {}));
  });
  EXPECT_EQ(ReadAll(server), "");
}

TEST(ClientAgainstABadServer, MetadataArrivingOutOfOrderIsReordered) {
  const std::vector<Recorded> m = RecordStream();
  ScriptedServer server([&](Connection& c, Listener&) {
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
    SEND(SendMetadata(c, MetadataType::kEndOfStream, 2, {}));
    SEND(SendBody(c, MakeBodyTag(BodyType::kPacked, 1), m[1].body));
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 1, m[1].metadata));
  });
  EXPECT_EQ(ReadAll(server), "");
}

TEST(ClientAgainstABadServer, MalformedMetadataIsNamed) {
  const std::vector<Recorded> m = RecordStream();
  ScriptedServer server([&](Connection& c, Listener&) {
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 1, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
    SEND(SendBody(c, MakeBodyTag(BodyType::kPacked, 1), m[1].body));
  });
  EXPECT_THAT(ReadAll(server), ::testing::HasSubstr("not a valid Message flatbuffer"));
}

TEST(ClientAgainstABadServer, AnUnknownMetadataTypeIsNamed) {
  const std::vector<Recorded> m = RecordStream();
  ScriptedServer server([&](Connection& c, Listener&) {
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
    SEND(SendMetadata(c, static_cast<MetadataType>(7), 1, m[1].metadata));
  });
  EXPECT_THAT(ReadAll(server), ::testing::HasSubstr("has unknown type 7"));
}

TEST(ClientAgainstABadServer, AnUnknownBodyTypeIsNamed) {
  const std::vector<Recorded> m = RecordStream();
  ScriptedServer server([&](Connection& c, Listener&) {
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 1, m[1].metadata));
    SEND(SendBody(c, (uint64_t{2} << 56) | 1, m[1].body));
  });
  EXPECT_THAT(ReadAll(server), ::testing::HasSubstr("unknown body type 2"));
}

TEST(ClientAgainstABadServer, ReservedTagBitsAreRefused) {
  const std::vector<Recorded> m = RecordStream();
  ScriptedServer server([&](Connection& c, Listener&) {
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 1, m[1].metadata));
    SEND(SendBody(c, (uint64_t{1} << 40) | 1, m[1].body));
  });
  EXPECT_THAT(ReadAll(server), ::testing::HasSubstr("reserved"));
}

// The client waits for message 1 up to its timeout by its clock, and not a tick less.
TEST(ClientAgainstABadServer, AMissingSequenceNumberTimesOutByNumber) {
  const std::vector<Recorded> m = RecordStream();
  // 2 and the end (3) come before the schema (0): once the client has its schema it holds both,
  // and its one wait on the clock is for message 1.
  ScriptedServer server([&](Connection& c, Listener&) {
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 2, m[1].metadata));
    SEND(SendMetadata(c, MetadataType::kEndOfStream, 3, {}));
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
  });
  auto clock = std::make_shared<ManualClock>();
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream stream,
                       ConnectStream(server.uri(), "t", Timed(clock)));
  EXPECT_THAT(AtTheDeadline(*clock, 500ms, [&] { return ReadRest(stream.get()); }),
              ::testing::HasSubstr("metadata (message 1): the server sent nothing for 500 ms "
                                   "(metadata message 1 never came; 2 later one(s) did)"));
}

TEST(ClientAgainstABadServer, ADuplicateSequenceNumberIsNamed) {
  const std::vector<Recorded> m = RecordStream();
  ScriptedServer server([&](Connection& c, Listener&) {
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 2, m[1].metadata));
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 2, m[1].metadata));
  });
  EXPECT_THAT(ReadAll(server), ::testing::HasSubstr("sequence number 2 arrived twice"));
}

TEST(ClientAgainstABadServer, AStreamThatDoesNotStartWithItsSchemaIsRefused) {
  const std::vector<Recorded> m = RecordStream();
  ScriptedServer batch_first([&](Connection& c, Listener&) {
    SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[1].metadata));
    SEND(SendBody(c, MakeBodyTag(BodyType::kPacked, 0), m[1].body));
  });
  EXPECT_THAT(ReadAll(batch_first), ::testing::HasSubstr("message 0: "));
  ScriptedServer empty(
      [&](Connection& c, Listener&) { SEND(SendMetadata(c, MetadataType::kEndOfStream, 0, {})); });
  EXPECT_THAT(ReadAll(empty), ::testing::HasSubstr("ended before its schema"));
}

TEST(ClientAgainstABadServer, AServerErrorIsPassedOn) {
  ScriptedServer server([&](Connection& c, Listener&) {
    const std::string text = "the disk caught fire";
    SEND(SendMetadata(c, MetadataType::kFerryError, 0, {text.begin(), text.end()}));
  });
  EXPECT_THAT(ReadAll(server), ::testing::HasSubstr("the server reported: the disk caught fire"));
}

// Type-1 bodies: pairs into a segment the scripted server shares.
class TypeOneLies : public ::testing::Test {
 protected:
  // Send the batch as pairs (address, length) after copying its body into a fresh segment.
  static std::string Serve(
      const std::function<std::vector<BufferRef>(const Recorded&, const Region&)>& lie,
      bool share = true) {
    const std::vector<Recorded> m = RecordStream();
    ScriptedServer server([&](Connection& c, Listener& l) {
      auto region = l.CreateRegion(1 << 16);
      ASSERT_OK(region.status());
      std::memcpy((*region)->data(), m[1].body.data(), m[1].body.size());
      if (share) ASSERT_OK(c.ShareRegion(*region));
      SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
      SEND(SendMetadata(c, MetadataType::kIpcMessage, 1, m[1].metadata));
      SEND(SendBody(c, MakeBodyTag(BodyType::kBufferList, 1),
                    EncodeBufferList(lie(m[1], **region))));
      SEND(SendMetadata(c, MetadataType::kEndOfStream, 2, {}));
    });
    return ReadAll(server);
  }

  static std::vector<BufferRef> Honest(const Recorded& r, const Region& region) {
    std::vector<BufferRef> pairs;
    for (const ipc::BodyBuffer& b : r.buffers) {
      pairs.push_back({region.WireAddress(b.offset), static_cast<uint64_t>(b.length)});
    }
    return pairs;
  }
};

TEST_F(TypeOneLies, HonestPairsReadBack) { EXPECT_EQ(Serve(&Honest), ""); }

TEST_F(TypeOneLies, APairOutsideTheSegmentIsNamed) {
  EXPECT_THAT(Serve([](const Recorded& r, const Region& region) {
                auto pairs = Honest(r, region);
                pairs.back().address = region.WireAddress((1 << 16) - 8);
                return pairs;
              }),
              ::testing::HasSubstr("lies outside segment 0 of 65536 bytes"));
}

TEST_F(TypeOneLies, AnOverflowingPairIsNamed) {
  EXPECT_THAT(Serve([](const Recorded& r, const Region& region) {
                auto pairs = Honest(r, region);
                pairs.back().length = ~uint64_t{0} - 4;
                return pairs;
              }),
              ::testing::AnyOf(::testing::HasSubstr("lies outside segment"),
                               ::testing::HasSubstr("total")));
}

TEST_F(TypeOneLies, APairIntoAnUnsharedSegmentIsNamed) {
  EXPECT_THAT(Serve(&Honest, /*share=*/false), ::testing::HasSubstr("never shared"));
}

TEST_F(TypeOneLies, ALyingLengthIsNamed) {
  EXPECT_THAT(Serve([](const Recorded& r, const Region& region) {
                auto pairs = Honest(r, region);
                pairs.back().length -= 8;
                return pairs;
              }),
              ::testing::HasSubstr("but the metadata says"));
}

TEST_F(TypeOneLies, TooFewPairsAreNamed) {
  EXPECT_THAT(Serve([](const Recorded& r, const Region& region) {
                auto pairs = Honest(r, region);
                pairs.pop_back();
                return pairs;
              }),
              ::testing::HasSubstr("locations were given"));
}

// A paced client asks in steps of a quarter of its window, and sends nothing when it waits:
// what it owes is under the window, so the server always holds a credit for the batch waited
// for. The scripted server sends each batch only once the client waits for it, takes the credits
// that came, and checks that it held one for that batch.
TEST(PacedClient, AWaitingClientSendsItsCreditsOnlyInSteps) {
  constexpr int kBatches = 6;
  const std::vector<Recorded> m = RecordStream();
  auto clock = std::make_shared<ManualClock>();
  std::atomic<int> asked{0};  // the read the test's thread is in (1-based)
  std::vector<uint64_t> credits;
  uint64_t held = 0;
  const auto take = [&](Connection& c) {
    while (true) {
      Result<TaggedMessage> r = c.ReceiveTagged(kCreditTag, ~uint64_t{0}, 0ms);
      if (!r.ok()) return;
      Result<uint64_t> n = ParseCredit(r->payload);
      ASSERT_OK(n.status());
      credits.push_back(*n);
      held += *n;
    }
  };
  // The client's read `k` is waiting on its clock.
  const auto waiting = [&](int k) {
    EXPECT_TRUE(testing::Within(10s, [&] { return asked.load() >= k; }));
    EXPECT_TRUE(clock->AwaitWaiters(1, 10s)) << "read " << k << " never waited";
  };
  {
    ScriptedServer server([&](Connection& c, Listener&) {
      take(c);  // the window, sent before want_data
      SEND(SendMetadata(c, MetadataType::kIpcMessage, 0, m[0].metadata));
      for (uint32_t k = 1; k <= kBatches; ++k) {
        waiting(static_cast<int>(k));
        take(c);
        EXPECT_GE(held, k) << "no credit held for batch " << k;
        SEND(SendMetadata(c, MetadataType::kIpcMessage, k, m[1].metadata));
        SEND(SendBody(c, MakeBodyTag(BodyType::kPacked, k), m[1].body));
      }
      waiting(kBatches + 1);
      // The last step's credit was sent before the wait for batch 6; it may still be on its way.
      EXPECT_TRUE(testing::Within(10s, [&] {
        take(c);
        return held >= 14;
      }));
      SEND(SendMetadata(c, MetadataType::kEndOfStream, kBatches + 1, {}));
    });
    ClientOptions options = Timed(clock);
    options.window = 8;
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server.uri(), "t", options));
    for (int k = 1; k <= kBatches + 1; ++k) {
      asked.store(k);
      UniqueDeviceArray a;
      ASSERT_EQ(s->get_next(s.get(), a.get()), 0) << s->get_last_error(s.get());
      ASSERT_EQ(a.valid(), k <= kBatches) << "read " << k;
    }
  }
  // The window, then a step of two for every second read; none for a read that waited.
  EXPECT_EQ(credits, (std::vector<uint64_t>{8, 2, 2, 2}));
}

TEST(ClientConnect, AnUnreachableServerFailsClearly) {
  Uri uri;
  uri.scheme = "shm";
  uri.authority = "@ferry-nobody-listens-here";
  uri.want_data = kDefaultWantDataTag;
  // Tried again and again until the timeout by the client's clock, and not a tick less.
  auto clock = std::make_shared<ManualClock>();
  ClientOptions options = Timed(clock);
  options.timeout = 100ms;
  ASSERT_RAISES_WITH(
      StatusCode::kUnavailable, "connecting to shm://@ferry-nobody-listens-here",
      AtTheDeadline(*clock, 100ms, [&] { return ConnectStream(uri, "t", options).status(); }));
  uri.scheme = "carrier-pigeon";
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unknown transport \"carrier-pigeon\"",
                     ConnectStream(uri, "t"));
}

// ---- Column projection (read.columns), on every transport and body type ----------------------

// Three batches of 1,000 rows: x, int64 without nulls (8,000 value bytes, an empty validity
// buffer), and s, strings of 100 bytes (4,004 offset bytes, 100,000 data bytes).
struct Wide {
  std::shared_ptr<Dataset> dataset;
  std::vector<Json> x, s;  // each batch's rows of that column alone
};

Result<Wide> WideBatches() {
  constexpr int kRows = 1000;
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  Wide out;
  const Field root =
      testing::BatchField({Field::Make("l", "x").WithFlags(0), Field::Make("u", "s").WithFlags(0)});
  for (int b = 0; b < 3; ++b) {
    Json rows = Json::array(), x = Json::array(), s = Json::array();
    for (int i = 0; i < kRows; ++i) {
      const std::string text = std::string(99, static_cast<char>('a' + (b * kRows + i) % 26)) +
                               static_cast<char>('A' + i % 26);
      rows.push_back(Json{{"x", int64_t{b} * kRows + i}, {"s", text}});
      x.push_back(Json{{"x", int64_t{b} * kRows + i}});
      s.push_back(Json{{"s", text}});
    }
    FERRY_ASSIGN_OR_RAISE(Array a, testing::ArrayFromJson(root, rows.dump()));
    UniqueSchema batch_schema;
    batches.push_back(testing::ToCpuDeviceArray(std::move(a), &batch_schema));
    schema = std::move(batch_schema);
    out.x.push_back(std::move(x));
    out.s.push_back(std::move(s));
  }
  FERRY_ASSIGN_OR_RAISE(out.dataset, Dataset::FromBatches(std::move(schema), std::move(batches)));
  return out;
}

struct ProjectionShape {
  std::string transport;
  BodyType body;
  bool keep;
};

class ClientProjection : public ::testing::TestWithParam<ProjectionShape> {};

TEST_P(ClientProjection, OnlyTheColumnsAskedForAreReadAndFetched) {
  const ProjectionShape& shape = GetParam();
  if (shape.transport == "ucx" && !UcxAvailable()) {
    GTEST_SKIP() << "this build has no UCX transport (libucx-dev was not found)";
  }
  ServerOptions so;
  so.transport = shape.transport;
  so.body_type = shape.body;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(so));
  ASSERT_OK_AND_ASSIGN(Wide data, WideBatches());
  if (shape.keep) {
    ASSERT_OK(server->Keep("t", data.dataset));
  } else {
    server->Add("t", data.dataset);
  }
  struct Read {
    std::vector<int32_t> columns;
    const std::vector<Json>* expected;
    int64_t fetched;  // the buffer bytes a type-1 read takes, by hand
  };
  const std::vector<Read> reads = {{{0}, &data.x, 3 * 8000}, {{1}, &data.s, 3 * (4004 + 100000)}};
  int64_t packed_bodies = 0;
  for (const Read& r : reads) {
    SCOPED_TRACE("columns " + Json(r.columns).dump());
    ClientOptions options;
    options.read.columns = r.columns;
    options.bytes_read = std::make_shared<std::atomic<int64_t>>(0);
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("t"), "t", options));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, *r.expected);
    s.reset();
    if (shape.body == BodyType::kBufferList) {
      EXPECT_EQ(options.bytes_read->load(), r.fetched);
    } else {
      // A packed body travels whole, whichever columns are decoded.
      EXPECT_GT(options.bytes_read->load(), 3 * (8000 + 4004 + 100000));
      if (packed_bodies != 0) {
        EXPECT_EQ(options.bytes_read->load(), packed_bodies);
      }
      packed_bodies = options.bytes_read->load();
    }
  }
  // Everything lent was returned, columns read or not.
  EXPECT_TRUE(server->AwaitIdle(5s));
  const ServerStats stats = server->stats();
  EXPECT_EQ(stats.addresses_freed, stats.addresses_lent);
  EXPECT_EQ(stats.sessions_failed, 0) << server->last_error();
}

INSTANTIATE_TEST_SUITE_P(Shapes, ClientProjection,
                         ::testing::Values(ProjectionShape{"shm", BodyType::kBufferList, false},
                                           ProjectionShape{"shm", BodyType::kPacked, false},
                                           ProjectionShape{"ucx", BodyType::kBufferList, false},
                                           ProjectionShape{"ucx", BodyType::kBufferList, true},
                                           ProjectionShape{"ucx", BodyType::kPacked, false}),
                         [](const ::testing::TestParamInfo<ProjectionShape>& p) {
                           return p.param.transport +
                                  (p.param.body == BodyType::kPacked ? "Packed" : "BufferList") +
                                  (p.param.keep ? "Kept" : "");
                         });

}  // namespace
}  // namespace ferry::dipc
