// The distinct addresses of a type-1 buffer list: sorted and without repeats whether they fit
// inline (eight) or not, and each removed once, the rest staying sorted. Checked against
// hand-written lists and, for random short lists, against std::set.
#include "dipc/distinct_addresses.hpp"

#include <random>
#include <set>
#include <vector>

#include "support/test_util.hpp"

namespace ferry::dipc::internal {
namespace {

std::vector<uint64_t> Held(const DistinctAddresses& d) {
  return {d.view().begin(), d.view().end()};
}

std::vector<BufferRef> Refs(const std::vector<uint64_t>& addresses) {
  std::vector<BufferRef> refs;
  for (uint64_t a : addresses) refs.push_back(BufferRef{a, 8});
  return refs;
}

TEST(DistinctAddresses, AFewAreSortedWithoutRepeats) {
  // A batch whose zero-length buffers share an address with the buffer after them.
  const DistinctAddresses d(Refs({0x300, 0x100, 0x300, 0x200, 0x100}));
  EXPECT_EQ(Held(d), (std::vector<uint64_t>{0x100, 0x200, 0x300}));
  EXPECT_EQ(d.size(), 3u);
  EXPECT_FALSE(d.empty());
  EXPECT_TRUE(DistinctAddresses(std::vector<BufferRef>{}).empty());
}

TEST(DistinctAddresses, EveryOrderOfUpToEightAgreesWithASet) {
  // Random lists of every length that fits inline, with repeats, against std::set.
  std::mt19937_64 random(46);
  for (int round = 0; round < 2000; ++round) {
    const size_t n = static_cast<size_t>(round % 9);
    std::vector<uint64_t> addresses;
    for (size_t i = 0; i < n; ++i) addresses.push_back(random() % 6 * 0x40);
    const std::set<uint64_t> oracle(addresses.begin(), addresses.end());
    EXPECT_EQ(Held(DistinctAddresses(Refs(addresses))),
              (std::vector<uint64_t>(oracle.begin(), oracle.end())))
        << "round " << round;
  }
}

TEST(DistinctAddresses, MoreThanEightAreKeptAsWell) {
  std::vector<uint64_t> addresses;
  for (uint64_t i = 20; i > 0; --i) addresses.push_back(i * 64);
  addresses.push_back(64);  // a repeat
  DistinctAddresses d(Refs(addresses));
  ASSERT_EQ(d.size(), 20u);
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(d.view()[i], (i + 1) * 64) << i;
  // Moved, as a server moves it into its record of the lent block.
  const DistinctAddresses moved = std::move(d);
  EXPECT_EQ(moved.size(), 20u);
  EXPECT_EQ(moved.view().front(), 64u);
  EXPECT_EQ(moved.view().back(), 20u * 64);
}

TEST(DistinctAddresses, EachAddressIsRemovedOnce) {
  for (const size_t n : {size_t{5}, size_t{12}}) {
    std::vector<uint64_t> addresses;
    for (uint64_t i = 0; i < n; ++i) addresses.push_back(0x1000 + i * 16);
    DistinctAddresses d(Refs(addresses));
    EXPECT_FALSE(d.Remove(0x999)) << "never held";
    EXPECT_TRUE(d.Remove(0x1010));
    EXPECT_FALSE(d.Remove(0x1010)) << "freed twice";
    EXPECT_TRUE(d.Remove(0x1000));
    EXPECT_TRUE(d.Remove(addresses.back()));
    std::vector<uint64_t> left(addresses.begin() + 2, addresses.end() - 1);
    EXPECT_EQ(Held(d), left) << n << " addresses";
    for (uint64_t a : left) EXPECT_TRUE(d.Remove(a));
    EXPECT_TRUE(d.empty());
  }
}

TEST(DistinctAddresses, RemovedInOrderTheRestStaysHeldAndSorted) {
  for (const size_t n : {size_t{4}, size_t{11}}) {
    std::vector<uint64_t> addresses;
    for (uint64_t i = 0; i < n; ++i) addresses.push_back(0x2000 + i * 64);
    DistinctAddresses d(Refs(addresses));
    for (size_t k = 0; k + 1 < n; ++k) {
      EXPECT_TRUE(d.Remove(addresses[k])) << k;
      EXPECT_FALSE(d.Remove(addresses[k])) << "freed twice: " << k;
      EXPECT_EQ(Held(d), std::vector<uint64_t>(addresses.begin() + static_cast<long>(k) + 1,
                                               addresses.end()))
          << k;
    }
    const DistinctAddresses moved = std::move(d);  // as a map's node moves
    EXPECT_EQ(Held(moved), std::vector<uint64_t>{addresses.back()});
  }
}

}  // namespace
}  // namespace ferry::dipc::internal
