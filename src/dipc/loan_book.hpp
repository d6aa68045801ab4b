// Internal to the dissociated-IPC server: the batches a session lent in place, and which of
// their addresses the client still holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "dipc/distinct_addresses.hpp"
#include "dipc/spare_nodes.hpp"
#include "ferry/abi/unique.hpp"

namespace ferry::dipc::internal {

/// The batches a producer wrote in the shared region and a session lent where they lie: each
/// holds its batch (a Loan) until the client has freed every distinct address it was lent
/// under. A batch is filed under its smallest address only: ferry's client frees a batch's
/// addresses together and in order, so a free finds its batch by that address or as the next
/// address of the batch freed last (FreeInOrder), at one map entry a batch. A client that frees
/// any other way, as the protocol lets it, has every address filed the first time a free is
/// not found so (Free), and from then on. Entries and batches are reused, up to kSpareNodes, so
/// a loan allocates nothing once the stream runs. Not thread-safe: the session's lock guards it.
class LoanBook {
 public:
  using Loan = std::shared_ptr<UniqueDeviceArray>;

  LoanBook() = default;
  LoanBook(const LoanBook&) = delete;
  LoanBook& operator=(const LoanBook&) = delete;

  /// File `loan` under `addresses` (not empty); a batch lent by several messages (its
  /// dictionaries, then itself) is filed once for each.
  void Lend(const Loan& loan, const DistinctAddresses& addresses);

  /// Take back `address` if it is the next one of the batch freed from last, or the smallest of
  /// a batch, while only those are filed; whether it was. A batch whose last address this was
  /// hands its loan to `returned`, to be dropped outside the lock (its release is the
  /// producer's code).
  bool FreeInOrder(uint64_t address, std::vector<Loan>* returned);

  /// Take back any address lent, filing every address first if only the smallest ones were;
  /// whether it was lent. Cost: one lookup, after a walk over what is held the first time.
  bool Free(uint64_t address, std::vector<Loan>* returned);

  /// Hand every loan to `returned` and forget them.
  void Clear(std::vector<Loan>* returned);

  bool empty() const noexcept { return live_.empty(); }
  /// Addresses lent and not yet freed (an address lent twice counts twice).
  int64_t held() const noexcept { return held_; }
  /// Whether every address is filed (a client freed out of order); for tests.
  bool every_address_filed() const noexcept { return every_address_; }

 private:
  struct Batch {
    Loan loan;
    DistinctAddresses left;  // its addresses not yet freed, sorted
  };
  using Batches = std::list<Batch>;
  using Index = std::unordered_multimap<uint64_t, Batches::iterator>;

  // Takes `address` from the batch it is filed under, and its entry; whether it is filed.
  bool TakeFiled(uint64_t address, std::vector<Loan>* returned);
  // Takes `address` (the first of `batch`'s left, or any when every address is filed) from it.
  void Take(Batches::iterator batch, uint64_t address, std::vector<Loan>* returned);
  // File every address of every batch held.
  void FileEveryAddress();

  Batches live_;
  Batches spare_;  // batches' nodes for the next loans, up to kSpareNodes
  Index index_;    // the smallest address of each batch, or every address
  SpareNodes<Index> spare_index_{kSpareNodes};
  Batches::iterator current_ = live_.end();  // the batch freed from last, or end
  int64_t held_ = 0;
  bool every_address_ = false;
};

}  // namespace ferry::dipc::internal
