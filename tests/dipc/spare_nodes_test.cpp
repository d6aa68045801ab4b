// Spare nodes of a server's maps: an entry taken out leaves its node for the next one put in
// (the same memory, seen through the entries' addresses), up to the limit; a key already held
// is replaced, as insert_or_assign would; a multimap keeps both entries of a key. Checked
// against hand-written contents.
#include "dipc/spare_nodes.hpp"

#include <map>
#include <memory>
#include <unordered_map>

#include "support/test_util.hpp"

namespace ferry::dipc::internal {
namespace {

using Map = std::map<int64_t, int64_t>;
using Multimap = std::unordered_multimap<uint64_t, std::shared_ptr<int>>;

TEST(SpareNodes, AnEntryPutInAfterOneTakenOutReusesItsNode) {
  Map map;
  SpareNodes<Map> spare(4);
  spare.Insert(map, 10, 100);
  const int64_t* second = &spare.Insert(map, 20, 200)->second;
  spare.Insert(map, 30, 300);
  EXPECT_EQ(spare.Take(map, map.find(20)), 200);
  EXPECT_EQ(spare.size(), 1U);
  const auto put = spare.Insert(map, 25, 250);
  EXPECT_EQ(&put->second, second);  // the node of the entry taken out
  EXPECT_EQ(spare.size(), 0U);
  EXPECT_EQ(map, (Map{{10, 100}, {25, 250}, {30, 300}}));
}

TEST(SpareNodes, NoMoreThanTheLimitAreKept) {
  Map map{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}};
  SpareNodes<Map> spare(3);
  for (int64_t k = 1; k <= 5; ++k) spare.Take(map, map.find(k));
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(spare.size(), 3U);
  for (int64_t k = 6; k <= 9; ++k) spare.Insert(map, k, -k);  // three reused, one new
  EXPECT_EQ(spare.size(), 0U);
  EXPECT_EQ(map, (Map{{6, -6}, {7, -7}, {8, -8}, {9, -9}}));
}

TEST(SpareNodes, AKeyAlreadyHeldIsReplacedWithOrWithoutASpare) {
  Map map{{7, 70}, {8, 80}};
  SpareNodes<Map> spare(2);
  spare.Insert(map, 7, 71);  // no spare: insert_or_assign
  EXPECT_EQ(map, (Map{{7, 71}, {8, 80}}));
  spare.Take(map, map.find(8));
  ASSERT_EQ(spare.size(), 1U);
  const auto put = spare.Insert(map, 7, 72);  // a spare, and the key is held
  EXPECT_EQ(put, map.find(7));
  EXPECT_EQ(map, (Map{{7, 72}}));
  EXPECT_EQ(spare.size(), 1U);  // the spare went back
}

TEST(SpareNodes, AMultimapKeepsEveryEntryAndTakeHandsBackTheValue) {
  Multimap loans;
  SpareNodes<Multimap> spare(8);
  auto held = std::make_shared<int>(5);
  spare.Insert(loans, 0x1000, held);
  spare.Insert(loans, 0x1000, held);  // an address lent by two batches: two entries
  EXPECT_EQ(loans.count(0x1000), 2U);
  EXPECT_EQ(held.use_count(), 3);
  std::shared_ptr<int> back = spare.Take(loans, loans.find(0x1000));
  EXPECT_EQ(back, held);
  back.reset();
  EXPECT_EQ(held.use_count(), 2);  // the spare node holds no value
  EXPECT_EQ(loans.count(0x1000), 1U);
  spare.Insert(loans, 0x2000, held);
  EXPECT_EQ(spare.size(), 0U);
  EXPECT_EQ(loans.count(0x2000), 1U);
  EXPECT_EQ(held.use_count(), 3);
}

}  // namespace
}  // namespace ferry::dipc::internal
