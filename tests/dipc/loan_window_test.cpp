// A server's count of kept addresses lent to one client: every lend, free and count agrees with
// a std::map of address to times, for loans in order, out of order, repeated and unknown.
#include "dipc/loan_window.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "support/test_util.hpp"

namespace ferry::dipc::internal {
namespace {

// The oracle: address -> times lent and not freed.
struct Oracle {
  std::map<uint64_t, int64_t> held;
  int64_t times = 0;
  void Lend(uint64_t a) {
    ++held[a];
    ++times;
  }
  bool Free(uint64_t a) {
    auto it = held.find(a);
    if (it == held.end()) return false;
    if (--it->second == 0) held.erase(it);
    --times;
    return true;
  }
};

TEST(LoanWindow, LoansInOrderAreFreedInOrderOrNot) {
  LoanWindow w;
  for (uint64_t a : {0x100, 0x140, 0x140, 0x180}) w.Lend(a);  // 0x140 twice: a zero-length edge
  EXPECT_EQ(w.distinct(), 3);
  EXPECT_EQ(w.times(), 4);
  EXPECT_TRUE(w.Free(0x140));
  EXPECT_EQ(w.distinct(), 3);  // still lent once
  EXPECT_TRUE(w.Free(0x180));
  EXPECT_TRUE(w.Free(0x140));
  EXPECT_FALSE(w.Free(0x140));  // freed as often as lent
  EXPECT_FALSE(w.Free(0x1C0));  // never lent
  EXPECT_EQ(w.distinct(), 1);
  EXPECT_EQ(w.times(), 1);
  EXPECT_TRUE(w.Free(0x100));
  EXPECT_EQ(w.distinct(), 0);
  EXPECT_EQ(w.times(), 0);
  w.Lend(0x40);  // below everything lent before: the window starts again
  EXPECT_EQ(w.distinct(), 1);
  w.Clear();
  EXPECT_EQ(w.times(), 0);
  EXPECT_FALSE(w.Free(0x40));
}

TEST(LoanWindow, AnEarlyLoanHeldDoesNotKeepEveryLaterOne) {
  // A client that keeps its first batch while it reads and frees 100,000 more.
  LoanWindow w;
  w.Lend(0x10);
  for (uint64_t a = 0x20; a < 0x20 + 100000 * 0x10; a += 0x10) {
    w.Lend(a);
    ASSERT_TRUE(w.Free(a));
  }
  EXPECT_EQ(w.distinct(), 1);
  EXPECT_LE(w.window_size(), LoanWindow::kSweepAt);
  EXPECT_TRUE(w.Free(0x10));
  EXPECT_EQ(w.window_size(), 0u);
  EXPECT_FALSE(w.Free(0x20));  // swept, and freed already
}

TEST(LoanWindow, AgreesWithAMapUnderRandomLendsAndFrees) {
  std::mt19937_64 random(46);
  for (int round = 0; round < 20; ++round) {
    LoanWindow w;
    Oracle o;
    uint64_t next = 0x1000;
    std::vector<uint64_t> lent;
    for (int step = 0; step < 5000; ++step) {
      const uint64_t roll = random() % 100;
      if (roll < 45) {
        // A batch's addresses, ascending; sometimes one repeats the last (a zero-length buffer
        // at a body's end) or lies below the window (out of order).
        uint64_t a = next;
        if (roll < 3 && !lent.empty()) a = lent[random() % lent.size()];
        if (roll >= 3 && roll < 6) a = random() % next;
        if (roll >= 6 && roll < 9 && !lent.empty()) a = lent.back();
        if (a == next) next += 8 * (1 + random() % 4);
        w.Lend(a);
        o.Lend(a);
        lent.push_back(a);
      } else if (roll < 95 && !lent.empty()) {
        // Mostly the oldest, as a client frees; sometimes any.
        const size_t i = roll < 85 ? 0 : random() % lent.size();
        const uint64_t a = lent[i];
        lent.erase(lent.begin() + static_cast<long>(i));
        ASSERT_EQ(w.Free(a), o.Free(a)) << "round " << round << " step " << step;
      } else {
        const uint64_t a = random() % (next + 64);  // perhaps lent, perhaps not
        ASSERT_EQ(w.Free(a), o.Free(a)) << "round " << round << " step " << step;
        if (auto it = std::find(lent.begin(), lent.end(), a); it != lent.end()) lent.erase(it);
      }
      ASSERT_EQ(w.distinct(), static_cast<int64_t>(o.held.size())) << "step " << step;
      ASSERT_EQ(w.times(), o.times) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace ferry::dipc::internal
