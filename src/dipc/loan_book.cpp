// The batches a session lent in place: filed by their smallest address while the client frees
// in order, by every address once it does not.
#include "dipc/loan_book.hpp"

#include <iterator>
#include <utility>

namespace ferry::dipc::internal {

void LoanBook::Lend(const Loan& loan, const DistinctAddresses& addresses) {
  if (!spare_.empty()) {
    live_.splice(live_.end(), spare_, spare_.begin());
    live_.back().loan = loan;
    live_.back().left = addresses;
  } else {
    live_.push_back(Batch{loan, addresses});
  }
  const Batches::iterator batch = std::prev(live_.end());
  held_ += static_cast<int64_t>(addresses.size());
  if (every_address_) {
    for (const uint64_t a : addresses.view()) spare_index_.Insert(index_, a, batch);
  } else {
    spare_index_.Insert(index_, addresses.view()[0], batch);
  }
}

bool LoanBook::FreeInOrder(uint64_t address, std::vector<Loan>* returned) {
  if (live_.empty() || every_address_) return false;
  if (current_ != live_.end() && current_->left.view()[0] == address) {
    Take(current_, address, returned);
    return true;
  }
  // Filed only under their smallest address: the batches nothing was freed from yet.
  return TakeFiled(address, returned);
}

bool LoanBook::Free(uint64_t address, std::vector<Loan>* returned) {
  if (live_.empty()) return false;
  if (!every_address_) FileEveryAddress();
  return TakeFiled(address, returned);
}

bool LoanBook::TakeFiled(uint64_t address, std::vector<Loan>* returned) {
  const Index::iterator it = index_.find(address);
  if (it == index_.end()) return false;
  const Batches::iterator batch = it->second;
  spare_index_.Take(index_, it);
  Take(batch, address, returned);
  return true;
}

void LoanBook::Take(Batches::iterator batch, uint64_t address, std::vector<Loan>* returned) {
  // Filed under `address` (or current_'s next): it is held, and Remove finds it.
  (void)batch->left.Remove(address);
  --held_;
  if (!batch->left.empty()) {
    current_ = batch;
    return;
  }
  returned->push_back(std::move(batch->loan));
  if (current_ == batch) current_ = live_.end();
  if (spare_.size() < kSpareNodes) {
    spare_.splice(spare_.end(), live_, batch);
  } else {
    live_.erase(batch);
  }
}

void LoanBook::FileEveryAddress() {
  index_.clear();
  for (auto batch = live_.begin(); batch != live_.end(); ++batch) {
    for (const uint64_t a : batch->left.view()) spare_index_.Insert(index_, a, batch);
  }
  every_address_ = true;
}

void LoanBook::Clear(std::vector<Loan>* returned) {
  for (Batch& batch : live_) returned->push_back(std::move(batch.loan));
  spare_.splice(spare_.end(), live_);
  while (spare_.size() > kSpareNodes) spare_.pop_back();
  index_.clear();
  current_ = live_.end();
  held_ = 0;
  every_address_ = false;
}

}  // namespace ferry::dipc::internal
