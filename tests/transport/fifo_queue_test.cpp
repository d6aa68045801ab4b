// The mailbox's queue: the order of std::deque under random pushes, pops and erases (the
// oracle), through backlogs long enough to reclaim popped slots; a popped item's owner goes at
// once; and a queue that empties reuses its room (the first slot's address stays).
#include "transport/fifo_queue.hpp"

#include <deque>
#include <memory>
#include <random>

#include "support/test_util.hpp"

namespace ferry::transport::internal {
namespace {

TEST(FifoQueue, KeepsTheOrderOfADequeUnderRandomPushesPopsAndErases) {
  std::mt19937 random(46);
  FifoQueue<int> queue;
  std::deque<int> oracle;
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    // Pushes win two rounds in three for the first half, so backlogs build, and lose after.
    const int roll = static_cast<int>(random() % 6);
    const bool push = step < 10000 ? roll < 4 : roll < 2;
    if (push || oracle.empty()) {
      queue.push_back(next);
      oracle.push_back(next);
      ++next;
    } else if (roll == 5 && oracle.size() > 1) {
      const auto at = static_cast<std::ptrdiff_t>(random() % oracle.size());
      queue.erase(queue.begin() + at);
      oracle.erase(oracle.begin() + at);
    } else {
      ASSERT_EQ(queue.front(), oracle.front()) << "step " << step;
      queue.pop_front();
      oracle.pop_front();
    }
    ASSERT_EQ(queue.size(), oracle.size()) << "step " << step;
    ASSERT_EQ(queue.empty(), oracle.empty());
  }
  ASSERT_TRUE(std::equal(queue.begin(), queue.end(), oracle.begin(), oracle.end()));
  EXPECT_GT(next, 5000);  // backlogs of thousands passed through
}

TEST(FifoQueue, APoppedItemsOwnerGoesAtOnce) {
  FifoQueue<std::shared_ptr<int>> queue;
  auto held = std::make_shared<int>(1);
  queue.push_back(held);
  queue.push_back(held);
  ASSERT_EQ(held.use_count(), 3);
  queue.pop_front();
  EXPECT_EQ(held.use_count(), 2);  // the slot is not reclaimed yet, its item is gone
  queue.erase(queue.begin());
  EXPECT_EQ(held.use_count(), 1);
  EXPECT_TRUE(queue.empty());
}

TEST(FifoQueue, AQueueThatEmptiesReusesItsRoom) {
  FifoQueue<int> queue;
  for (int i = 0; i < 8; ++i) queue.push_back(i);
  const int* first = &queue.front();
  while (!queue.empty()) queue.pop_front();
  for (int round = 0; round < 1000; ++round) {
    queue.push_back(round);
    queue.push_back(round + 1);
    ASSERT_EQ(&queue.front(), first) << "round " << round;
    queue.pop_front();
    queue.pop_front();
  }
}

}  // namespace
}  // namespace ferry::transport::internal
