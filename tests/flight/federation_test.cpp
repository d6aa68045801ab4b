// A federated server's merge of its own FlightInfo with its peers' (the rules of
// docs/flight.md#federation, with hand-written infos), and the federation against real servers:
// a peer down fails the call naming it, or with allow_partial is named in app_metadata. The
// served result is checked against pyarrow.flight in tests/flight/test_federation.py.
#include "flight/federation.hpp"

#include <cerrno>
#include <nlohmann/json.hpp>

#include "ferry/flight/info.hpp"
#include "ferry/format/schema.hpp"
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
