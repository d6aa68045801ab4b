// The Flight server's catalogue: a flight's partitions and their names, the cut of a file's
// batches into endpoints of whole batches (sizes computed by hand from the IPC layout: an
// int64 column without nulls has a body of 8 bytes a row), and names taken by flights and
// partitions alike. The served result is checked against pyarrow.flight in
// tests/flight/test_partitioned_flights.py.
#include "flight/catalogue.hpp"

#include <cerrno>

#include "ferry/format/schema.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::flight::internal {
namespace {

// `count` batches of `rows` int64 values (a body of 8 * rows bytes each), and their schema.
std::vector<UniqueDeviceArray> Int64Batches(int count, int rows, UniqueSchema* schema) {
  std::vector<UniqueDeviceArray> out;
  for (int b = 0; b < count; ++b) {
    std::string json = "[";
    for (int i = 0; i < rows; ++i) json += (i ? ",{\"x\":" : "{\"x\":") + std::to_string(i) + "}";
    json += "]";
    Result<Array> a = testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x")}), json);
    EXPECT_TRUE(a.ok()) << a.status().message();
    // A schema of its own each time: the last one is kept (assigning releases the one before).
    UniqueSchema s;
    out.push_back(testing::ToCpuDeviceArray(std::move(*a), &s));
    *schema = std::move(s);
  }
  return out;
}

std::vector<size_t> GroupSizes(const std::vector<std::vector<UniqueDeviceArray>>& groups) {
  std::vector<size_t> sizes;
  for (const auto& g : groups) sizes.push_back(g.size());
  return sizes;
}

TEST(FlightCatalogue, SplitBatchesCutsWholeBatchesAtTheLimit) {
  UniqueSchema schema;
  // Five batches of 100 rows: 800 body bytes each.
  std::vector<UniqueDeviceArray> batches = Int64Batches(5, 100, &schema);
  ASSERT_OK_AND_ASSIGN(auto groups, SplitBatches(schema.get(), std::move(batches), 2000));
  EXPECT_EQ(GroupSizes(groups), (std::vector<size_t>{2, 2, 1}));
  // Exactly two batches fit 1600; a limit below one batch gives one batch per endpoint.
  ASSERT_OK_AND_ASSIGN(groups, SplitBatches(schema.get(), Int64Batches(5, 100, &schema), 1600));
  EXPECT_EQ(GroupSizes(groups), (std::vector<size_t>{2, 2, 1}));
  ASSERT_OK_AND_ASSIGN(groups, SplitBatches(schema.get(), Int64Batches(5, 100, &schema), 1599));
  EXPECT_EQ(GroupSizes(groups), (std::vector<size_t>{1, 1, 1, 1, 1}));
  ASSERT_OK_AND_ASSIGN(groups, SplitBatches(schema.get(), Int64Batches(5, 100, &schema), 0));
  EXPECT_EQ(GroupSizes(groups), (std::vector<size_t>{5}));
}

TEST(FlightCatalogue, PartitionsAreNamedAndCounted) {
  UniqueSchema schema;
  std::vector<std::vector<UniqueDeviceArray>> parts;
  parts.push_back(Int64Batches(2, 10, &schema));
  parts.push_back(Int64Batches(1, 30, &schema));
  parts.push_back(Int64Batches(3, 5, &schema));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Flight> flight,
                       MakeFlight("taxi", schema.get(), std::move(parts)));
  ASSERT_EQ(flight->partitions.size(), 3u);
  EXPECT_EQ(flight->partitions[0]->name, "taxi");
  EXPECT_EQ(flight->partitions[1]->name, "taxi/1");
  EXPECT_EQ(flight->partitions[2]->name, "taxi/2");
  EXPECT_EQ(flight->partitions[1]->records, 30);
  EXPECT_EQ(flight->records(), 20 + 30 + 15);
  EXPECT_EQ(flight->bytes(), 8 * (20 + 30 + 15));
  EXPECT_EQ(flight->readers(), 0);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "has no partition",
                     MakeFlight("none", schema.get(), {}));
}

TEST(FlightCatalogue, NamesAreTakenByFlightsAndPartitions) {
  UniqueSchema schema;
  auto make = [&](const std::string& name, int partitions) {
    std::vector<std::vector<UniqueDeviceArray>> parts;
    for (int i = 0; i < partitions; ++i) parts.push_back(Int64Batches(1, 4, &schema));
    return MakeFlight(name, schema.get(), std::move(parts));
  };
  Catalogue catalogue;
  ASSERT_OK_AND_ASSIGN(auto taxi, make("taxi", 3));
  ASSERT_OK(catalogue.Insert(taxi));
  EXPECT_TRUE(catalogue.Taken("taxi/2"));
  EXPECT_EQ(catalogue.FindPartition("taxi/1"), taxi->partitions[1]);
  EXPECT_EQ(catalogue.Find("taxi/1"), nullptr);
  // A flight named as another's partition, and a flight whose partition is a flight's name.
  ASSERT_OK_AND_ASSIGN(auto clash, make("taxi/1", 1));
  ASSERT_RAISES_WITH(StatusCode::kAlreadyExists, "\"taxi/1\"", catalogue.Insert(clash));
  ASSERT_OK_AND_ASSIGN(auto solo, make("a/1", 1));
  ASSERT_OK(catalogue.Insert(solo));
  ASSERT_OK_AND_ASSIGN(auto a, make("a", 2));
  ASSERT_RAISES_WITH(StatusCode::kAlreadyExists, "\"a/1\"", catalogue.Insert(a));
  EXPECT_EQ(catalogue.Find("a"), nullptr);
  // A flight read is erased all the same: every name is free at once, and the reader keeps the
  // partition it holds.
  std::shared_ptr<Partition> reading = catalogue.FindPartition("taxi/2");
  ASSERT_OK(catalogue.Erase("taxi"));
  EXPECT_FALSE(catalogue.Taken("taxi/2"));
  EXPECT_EQ(catalogue.FindPartition("taxi/2"), nullptr);
  EXPECT_EQ(reading, taxi->partitions[2]);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no flight named \"taxi\"", catalogue.Erase("taxi"));
}

}  // namespace
}  // namespace ferry::flight::internal
