// Internal to the dissociated-IPC server: the addresses of kept datasets lent to one client and
// not yet freed, counted without an allocation per loan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>

namespace ferry::dipc::internal {

// The addresses lent to one client from kept datasets, each with how many times it is lent and
// not yet freed. A kept dataset lends its messages in the order of their addresses, and a client
// frees them nearly in that order, so the loans are a window over that order: appended at the
// back, found at the front or by binary search, dropped from the front once freed. A std::map of
// them cost the server a node allocation and a free for every address of every batch. An address
// lent out of order goes to a map beside the window. Freed entries behind one still held (a
// client keeping an early batch) are swept out once they outnumber the held ones, so the window
// stays within twice what is lent (plus kSweepAt). Not thread-safe: the session's mutex guards
// it.
class LoanWindow {
 public:
  /// Below this many entries the window is never swept.
  static constexpr size_t kSweepAt = 256;

  /// Lend `address` once more.
  void Lend(uint64_t address) {
    ++times_;
    if (window_.empty() || address > window_.back().address) {
      // Past everything in the window; an address already held out of order stays there.
      if (!others_.empty()) {
        if (auto it = others_.find(address); it != others_.end()) {
          ++it->second;
          return;
        }
      }
      window_.push_back(Loan{address, 1});
      ++distinct_;
      return;
    }
    if (Loan* loan = Find(address)) {
      if (loan->times++ == 0) ++distinct_;
      return;
    }
    if (others_[address]++ == 0) ++distinct_;
  }

  /// Free one loan of `address`; false (and nothing changes) if it is not lent.
  bool Free(uint64_t address) {
    if (Loan* loan = Find(address); loan != nullptr && loan->times > 0) {
      --times_;
      if (--loan->times == 0) {
        --distinct_;
        if (loan == &window_.front()) {
          while (!window_.empty() && window_.front().times == 0) window_.pop_front();
        } else {
          Sweep();  // a freed entry left behind a held one
        }
      }
      return true;
    }
    auto it = others_.find(address);
    if (it == others_.end()) return false;
    --times_;
    if (--it->second == 0) {
      --distinct_;
      others_.erase(it);
    }
    return true;
  }

  /// Addresses lent at least once and not freed as often.
  int64_t distinct() const { return distinct_; }
  /// Loans not yet freed, an address lent twice counting twice.
  int64_t times() const { return times_; }

  /// Entries the window keeps, freed ones behind a held one included; for tests.
  size_t window_size() const { return window_.size(); }

  /// Forget every loan (the client is gone: its loans are freed).
  void Clear() {
    window_.clear();
    others_.clear();
    distinct_ = 0;
    times_ = 0;
  }

 private:
  struct Loan {
    uint64_t address = 0;
    int64_t times = 0;  // 0: freed, kept until the front passes it
  };

  // Drop the freed entries once they outnumber the held ones: each sweep at least halves the
  // window, so its cost is spread over the frees that filled it.
  void Sweep() {
    const auto held = static_cast<size_t>(distinct_) - others_.size();  // held in the window
    if (window_.size() < kSweepAt || window_.size() <= 2 * held) return;
    window_.erase(
        std::remove_if(window_.begin(), window_.end(), [](const Loan& l) { return l.times == 0; }),
        window_.end());
  }

  Loan* Find(uint64_t address) {
    // A client frees in the order it was lent: the front, nearly always.
    if (!window_.empty() && window_.front().address == address) return &window_.front();
    auto it = std::lower_bound(window_.begin(), window_.end(), address,
                               [](const Loan& l, uint64_t a) { return l.address < a; });
    return it != window_.end() && it->address == address ? &*it : nullptr;
  }

  std::deque<Loan> window_;             // ascending addresses
  std::map<uint64_t, int64_t> others_;  // lent below the window's back and not in it
  int64_t distinct_ = 0;
  int64_t times_ = 0;
};

}  // namespace ferry::dipc::internal
