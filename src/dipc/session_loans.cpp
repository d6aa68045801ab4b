// What a session lent a client and what the client gives back: its free_data (the loans it
// returns), its credits (ferry's pacing extension), and the wait for the last loan at the end.
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "dipc/fault.hpp"
#include "dipc/session.hpp"
#include "ferry/core/hex.hpp"
#include "ferry/core/status_code.hpp"
#include "ferry/dipc/protocol.hpp"

namespace ferry::dipc::internal {

using transport::TaggedMessage;

void Session::TakeFrees() {
  const uint64_t tag = state_->options.free_data_tag;
  // A paced client's credits come on their own tag, and a kept connection's next request on
  // its want_data tag: take every tag, and tell them apart.
  const bool reusable = conn_->reusable();
  const uint64_t mask = paced_ || reusable ? 0 : ~uint64_t{0};
  std::vector<uint64_t> addresses;  // every free_data's, its room reused
  while (!dead_.load()) {
    Result<TaggedMessage> m = conn_->ReceiveTagged(tag, mask, state_->options.timeout);
    if (!m.ok()) {
      if (m.status().code() == StatusCode::kDeadlineExceeded) continue;
      break;  // the client closed or went away
    }
    if (m->tag == kCreditTag) {
      if (!AddCredit(*m)) break;
      continue;
    }
    if (m->tag == kStreamDoneTag && reusable) {
      {
        std::lock_guard lock(mutex_);
        stream_done_ = true;
      }
      changed_.notify_all();
      continue;
    }
    if (m->tag != tag && reusable && ParseWantTag(state_->options.want_data_tag, m->tag).ok()) {
      std::unique_lock lock(mutex_);
      if (next_want_) {
        lock.unlock();
        Failed("the client sent a request (tag " + Hex(m->tag) +
                   ") while another of its requests waited to be served",
               StatusCode::kInvalidArgument);
        break;
      }
      // The credits before it were the last stream's: the window for the next comes after it.
      credits_ = 0;
      next_want_ = std::move(*m);
      lock.unlock();
      changed_.notify_all();
      continue;
    }
    if (m->tag != tag) {
      Failed("the client sent a tagged message (tag " + Hex(m->tag) +
                 ") that is neither free_data nor credit",
             StatusCode::kInvalidArgument);
      break;
    }
    if (const Status parsed = ParseFreeData(m->payload, &addresses); !parsed.ok()) {
      Failed("the client sent a bad free_data: " + parsed.message(), parsed.code());
      break;
    }
    Release(addresses);
  }
  {
    std::lock_guard lock(mutex_);
    client_closed_ = true;
  }
  client_gone_ = true;
  changed_.notify_all();
  // A client gone before the end leaves a sender waiting for room: end the session now.
  if (state_->allocator) state_->allocator->Wake();
}

bool Session::AddCredit(const TaggedMessage& m) {
  Result<uint64_t> count = ParseCredit(m.payload);
  if (!count.ok()) {
    Failed("the client sent a bad credit: " + count.status().message(), count.status().code());
  } else {
    std::lock_guard lock(mutex_);
    credits_ = *count > UINT64_MAX - credits_ ? UINT64_MAX : credits_ + *count;
  }
  changed_.notify_all();  // a sender waiting for a credit gets one, or learns the session failed
  return count.ok();
}

Status Session::AwaitCredit() {
  if (!paced_) return Status::OK();
  std::unique_lock lock(mutex_);
  const bool ready = state_->options.clock->WaitFor(changed_, lock, state_->options.timeout, [&] {
    return credits_ > 0 || client_closed_ || dead_.load() || failed_.load();
  });
  if (credits_ > 0) {
    --credits_;
    return Status::OK();
  }
  if (failed_.load()) return Status::Invalid("the session failed while waiting for a credit");
  if (ready) return Status::Unavailable("the client went away");
  return Status::DeadlineExceeded("the paced client asked for no batch for " +
                                  std::to_string(state_->options.timeout.count()) + " ms");
}

Result<bool> Session::LendInPlace(uint32_t seq, const ipc::EncodedMessage& m) {
  transport::Region& region = *state_->region;
  const auto base = reinterpret_cast<uintptr_t>(region.data());
  const auto size = static_cast<uintptr_t>(region.size());
  // Offsets into the region, compared unsigned: a pointer below the region wraps past its size.
  uintptr_t first = 0;
  bool any = false;
  for (const ipc::BodyBuffer& b : m.buffers) {
    if (b.length == 0) continue;
    const uintptr_t at = reinterpret_cast<uintptr_t>(b.data) - base;
    if (at >= size || size - at < static_cast<uintptr_t>(b.length)) return false;
    if (!any) first = at;
    any = true;
  }
  if (!any) return false;  // nothing to lend: the copy path sends an empty body its own way
  std::vector<BufferRef>& pairs = pairs_;
  pairs.clear();
  for (const ipc::BodyBuffer& b : m.buffers) {
    // An empty buffer names the batch's first address, so it adds no address to free.
    const uintptr_t at = b.length == 0 ? first : reinterpret_cast<uintptr_t>(b.data) - base;
    pairs.push_back(
        BufferRef{region.WireAddress(static_cast<int64_t>(at)), static_cast<uint64_t>(b.length)});
  }
  const DistinctAddresses addresses(pairs);
  {
    // Recorded before sending: the client may free them before the send returns.
    std::lock_guard lock(mutex_);
    loans_.Lend(loan_, addresses);
    state_->addresses_lent += static_cast<int64_t>(addresses.size());
    block_addresses_ += static_cast<int64_t>(addresses.size());
  }
  ++state_->bodies_lent_in_place;
  EncodeBufferList(pairs, &list_);
  const ByteSpan piece(list_);
  FERRY_RETURN_NOT_OK(SendBody(seq, BodyType::kBufferList, {&piece, 1}, m.metadata));
  return true;
}

void Session::Release(const std::vector<uint64_t>& addresses) {
  // Batches lent in place whose addresses came back: dropped once the lock is let go, since the
  // last drop of one runs its release, the producer's code.
  std::vector<Loan>& returned = returned_;
  {
    std::lock_guard lock(mutex_);
    for (uint64_t a : addresses) {
      if (lent_.Free(a)) {
        ++state_->addresses_freed;
        continue;
      }
      if (loans_.FreeInOrder(a, &returned)) {
        --block_addresses_;
        ++state_->addresses_freed;
        continue;
      }
      // A batch's addresses are freed together, and batches mostly in the order they were lent:
      // the block of the last address freed, or the one after it once that block is done, is
      // looked at first.
      auto it = free_hint_;
      if (it == blocks_.end() || a < it->first ||
          a - it->first >= static_cast<uint64_t>(it->second.size)) {
        it = blocks_.upper_bound(a);
        it = it == blocks_.begin() ? blocks_.end() : std::prev(it);
      }
      DistinctAddresses* left = nullptr;
      if (it != blocks_.end()) {
        free_hint_ = it;
        left = &it->second.left;
        if (!left->Remove(a)) left = nullptr;
      }
      if (left == nullptr && loans_.Free(a, &returned)) {
        // A loan's address freed out of order: the book files every address from now on.
        --block_addresses_;
        ++state_->addresses_freed;
        continue;
      }
      if (left == nullptr) {
        ++state_->unknown_frees;
        state_->Log(
            Record(LogLevel::kWarning, "unknown_free",
                   "free_data names address " + Hex(a) + ", which this client does not hold"));
        continue;
      }
      --block_addresses_;
      ++state_->addresses_freed;
      if (left->empty()) {
        (void)state_->allocator->Free(it->second.block, it->second.size);
        free_hint_ = std::next(it);
        spare_blocks_.Take(blocks_, it);
      }
    }
  }
  changed_.notify_all();
  returned.clear();
}

Status Session::AwaitEnd() {
  phase_ = "free";
  // A client that read everything and closed also ends the pause: nothing is left to stop.
  FaultPoint("server", "free", [this] {
    std::lock_guard lock(mutex_);
    return client_closed_ || dead_.load();
  });
  // The protocol's client closes after its last free_data; a client that closes holding
  // addresses gets them freed (it is disconnected). One that neither frees nor closes is waited
  // for up to the timeout.
  std::unique_lock lock(mutex_);
  const bool ended = state_->options.clock->WaitFor(changed_, lock, state_->options.timeout,
                                                    [&] { return client_closed_ || dead_.load(); });
  const size_t held = static_cast<size_t>(block_addresses_ + lent_.distinct());
  if (client_closed_ && held > 0) {
    state_->Log(Record(LogLevel::kInfo, "addresses_unreturned",
                       "the client closed holding " + std::to_string(held) + " addresses; freed"));
  }
  // A client that neither freed nor closed for the whole timeout is stopped or gone: closing
  // gracefully would wait on it again.
  unresponsive_ = !ended && !dead_.load();
  if (ended || dead_.load() || held == 0) return Status::OK();
  return Status::DeadlineExceeded("the client held " + std::to_string(held) +
                                  " addresses for longer than " +
                                  std::to_string(state_->options.timeout.count()) +
                                  " ms after the end of the stream; they are freed");
}

void Session::FreeAll() {
  std::vector<Loan> returned;
  {
    std::lock_guard lock(mutex_);
    int64_t held = block_addresses_;
    held += lent_.times();
    state_->addresses_reclaimed += held;
    for (const auto& [address, lent] : blocks_)
      (void)state_->allocator->Free(lent.block, lent.size);
    blocks_.clear();
    free_hint_ = blocks_.end();
    block_addresses_ = 0;
    lent_.Clear();
    loans_.Clear(&returned);
  }
  changed_.notify_all();
  returned.clear();  // the batches lent in place are released here, outside the lock
}

}  // namespace ferry::dipc::internal
