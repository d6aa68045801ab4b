// LoanBook: a batch lent in place is handed back exactly when the last of its addresses comes
// back, whatever order the client frees in, against a model that counts each address lent.
#include "dipc/loan_book.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

namespace ferry::dipc::internal {
namespace {

using Loan = LoanBook::Loan;

// Loans whose releases are counted, each knowing its number.
struct Loans {
  std::vector<int> released;  // how many times each loan was dropped
  Loan Make() {
    const int n = static_cast<int>(released.size());
    released.push_back(0);
    return Loan(new UniqueDeviceArray(), [this, n](UniqueDeviceArray* a) {
      ++released[static_cast<size_t>(n)];
      delete a;
    });
  }
};

DistinctAddresses Addresses(std::vector<uint64_t> at) {
  std::vector<transport::BufferRef> refs;
  for (const uint64_t a : at) refs.push_back({a, 8});
  return DistinctAddresses(refs);
}

TEST(LoanBook, ABatchFreedInOrderComesBackWithItsLastAddress) {
  Loans loans;
  LoanBook book;
  std::vector<Loan> returned;
  // As ferry's server lends: a batch's buffers, an empty one naming its first address again.
  book.Lend(loans.Make(), Addresses({0x1040, 0x1000, 0x1080, 0x1000}));
  book.Lend(loans.Make(), Addresses({0x2000, 0x2040}));
  EXPECT_EQ(book.held(), 5);
  // As ferry's client frees: each batch's distinct addresses, sorted, together.
  for (const uint64_t a : {0x1000, 0x1040}) {
    EXPECT_TRUE(book.FreeInOrder(a, &returned));
    EXPECT_TRUE(returned.empty());
  }
  EXPECT_TRUE(book.FreeInOrder(0x1080, &returned));
  ASSERT_EQ(returned.size(), 1u);
  returned.clear();
  EXPECT_EQ(loans.released, (std::vector<int>{1, 0}));
  EXPECT_FALSE(book.FreeInOrder(0x1000, &returned));  // freed already
  EXPECT_FALSE(book.FreeInOrder(0x3000, &returned));  // never lent
  EXPECT_TRUE(book.FreeInOrder(0x2000, &returned));
  EXPECT_TRUE(book.FreeInOrder(0x2040, &returned));
  returned.clear();
  EXPECT_EQ(loans.released, (std::vector<int>{1, 1}));
  EXPECT_TRUE(book.empty());
  EXPECT_EQ(book.held(), 0);
  EXPECT_FALSE(book.every_address_filed());
}

// A batch lent by two messages (its dictionary, then itself) is filed twice, and comes back
// after both were freed.
TEST(LoanBook, ABatchLentTwiceIsHeldUntilBothAreFreed) {
  Loans loans;
  LoanBook book;
  std::vector<Loan> returned;
  {
    const Loan loan = loans.Make();
    book.Lend(loan, Addresses({0x100}));
    book.Lend(loan, Addresses({0x200, 0x300}));
  }
  EXPECT_TRUE(book.FreeInOrder(0x100, &returned));
  returned.clear();
  EXPECT_EQ(loans.released[0], 0);
  EXPECT_TRUE(book.FreeInOrder(0x200, &returned));
  EXPECT_TRUE(book.FreeInOrder(0x300, &returned));
  returned.clear();
  EXPECT_EQ(loans.released[0], 1);
}

// Any order, addresses shared between batches, addresses never lent: each free is taken iff the
// model holds the address, held() follows the model, and every loan comes back once, after the
// last address that could be its.
TEST(LoanBook, AnyOrderOfFreesReturnsEveryLoanOnce) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 40; ++round) {
    Loans loans;
    LoanBook book;
    std::vector<Loan> returned;
    std::multiset<uint64_t> model;  // addresses lent and not freed
    std::vector<uint64_t> frees;
    const int batches = 1 + static_cast<int>(rng() % 30);
    for (int b = 0; b < batches; ++b) {
      std::vector<uint64_t> at;
      const int n = 1 + static_cast<int>(rng() % 12);  // past 8: DistinctAddresses' heap
      // Round 0: each batch its own buffers, as a producer's are. Later rounds share some.
      const uint64_t base = round == 0 ? 0x10000 * static_cast<uint64_t>(b) : 0;
      for (int k = 0; k < n; ++k) at.push_back(0x1000 + base + 0x40 * (rng() % 64));
      const DistinctAddresses distinct = Addresses(at);
      book.Lend(loans.Make(), distinct);
      for (const uint64_t a : distinct.view()) {
        model.insert(a);
        frees.push_back(a);
      }
    }
    // Round 0 frees in lend order, as ferry's client does; the rest shuffle, and add strays.
    if (round > 0) {
      for (int k = 0; k < 5; ++k) frees.push_back(0x9000 + 0x40 * k);
      std::shuffle(frees.begin(), frees.end(), rng);
    }
    for (const uint64_t a : frees) {
      const bool held = model.count(a) > 0;
      const bool taken = book.FreeInOrder(a, &returned) || book.Free(a, &returned);
      EXPECT_EQ(taken, held) << "round " << round << ", address " << a;
      if (held) model.erase(model.find(a));
      EXPECT_EQ(book.held(), static_cast<int64_t>(model.size()));
      returned.clear();
    }
    EXPECT_TRUE(book.empty());
    EXPECT_EQ(loans.released, std::vector<int>(static_cast<size_t>(batches), 1));
    if (round == 0) {
      EXPECT_FALSE(book.every_address_filed());
    }
  }
}

TEST(LoanBook, ABatchFreedOutOfOrderFilesEveryAddress) {
  Loans loans;
  LoanBook book;
  std::vector<Loan> returned;
  book.Lend(loans.Make(), Addresses({0x100, 0x140}));
  book.Lend(loans.Make(), Addresses({0x200, 0x240}));
  // The first of each, then the rest of the first: not in order.
  EXPECT_TRUE(book.FreeInOrder(0x100, &returned));
  EXPECT_TRUE(book.FreeInOrder(0x200, &returned));
  EXPECT_FALSE(book.FreeInOrder(0x140, &returned));
  EXPECT_TRUE(book.Free(0x140, &returned));
  EXPECT_TRUE(book.every_address_filed());
  EXPECT_EQ(returned.size(), 1u);
  returned.clear();
  // Lent from now on: filed by every address.
  book.Lend(loans.Make(), Addresses({0x300, 0x340}));
  EXPECT_TRUE(book.Free(0x340, &returned));
  EXPECT_TRUE(book.Free(0x240, &returned));
  EXPECT_TRUE(book.Free(0x300, &returned));
  returned.clear();
  EXPECT_EQ(loans.released, (std::vector<int>{1, 1, 1}));
}

TEST(LoanBook, ClearHandsBackEveryLoan) {
  Loans loans;
  LoanBook book;
  std::vector<Loan> returned;
  for (int b = 0; b < 3; ++b) book.Lend(loans.Make(), Addresses({0x100u * (b + 1), 0x1000}));
  EXPECT_TRUE(book.FreeInOrder(0x100, &returned));
  book.Clear(&returned);
  EXPECT_EQ(returned.size(), 3u);
  EXPECT_TRUE(book.empty());
  EXPECT_EQ(book.held(), 0);
  returned.clear();
  EXPECT_EQ(loans.released, (std::vector<int>{1, 1, 1}));
  EXPECT_FALSE(book.FreeInOrder(0x200, &returned));
  EXPECT_FALSE(book.Free(0x200, &returned));
}

}  // namespace
}  // namespace ferry::dipc::internal
