// Internal to the dissociated-IPC client: what it owes the server. The Freer sends free_data
// for every address lent (batched), and closes the data connection once nothing is borrowed.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <vector>

#include "dipc/block_pool.hpp"
#include "dipc/distinct_addresses.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc::internal {

using transport::Connection;

// Sends free_data for what the server lent, and closes the data connection at the end. While
// the stream is read, frees are deferred and sent in batches: when enough are pending, or
// before the client would block waiting for the server (which may be waiting for them); a
// release on another thread while the reader waits is sent at once, for the same reason. Once
// the stream is over, each release sends at once, and when nothing is borrowed any more the
// connection closes: the protocol's client closes after its last free_data. Owned by the
// session and by every borrowed body, so it outlives both.
class Freer {
 public:
  Freer(std::shared_ptr<Connection> conn, uint64_t tag) : conn_(std::move(conn)), tag_(tag) {}
  ~Freer() { Finish(); }
  Freer(const Freer&) = delete;
  Freer& operator=(const Freer&) = delete;

  void Free(std::span<const uint64_t> addresses) {
    std::unique_lock lock(mutex_);
    pending_.insert(pending_.end(), addresses.begin(), addresses.end());
    if (!SendNow()) return;
    FlushLocked(lock);
  }

  // The reader's wait for the server, for its scope: what is pending is sent as it begins, and
  // every release meanwhile at once (the server may be waiting for the room they make).
  class Wait {
   public:
    explicit Wait(Freer& freer) : freer_(freer) {
      std::unique_lock lock(freer_.mutex_);
      ++freer_.waiting_;
      freer_.FlushLocked(lock);
    }
    ~Wait() {
      std::lock_guard lock(freer_.mutex_);
      --freer_.waiting_;
    }
    Wait(const Wait&) = delete;
    Wait& operator=(const Wait&) = delete;

   private:
    Freer& freer_;
  };

  // A body whose memory is the server's, mapped here, until Return.
  // A count, not under the lock: a body is borrowed by the reading thread before any release
  // or Finish can see it, and only a Return (under the lock) lets the count fall.
  void Borrow() { borrowed_.fetch_add(1, std::memory_order_relaxed); }
  void Return(std::span<const uint64_t> addresses) {
    std::unique_lock lock(mutex_);
    borrowed_.fetch_sub(1, std::memory_order_relaxed);
    pending_.insert(pending_.end(), addresses.begin(), addresses.end());
    if (!SendNow()) return;
    FlushLocked(lock);
    CloseIfDone(lock);
  }

  // Memory for borrowed bodies (MakeBorrowedBody): a body's hold goes back here with its last
  // owner and serves the next body, so a body costs no allocation of its own.
  const std::shared_ptr<BlockPool>& body_blocks() const noexcept { return body_blocks_; }

  // The stream is over, nothing was lent and the connection carries on (a kept connection):
  // nothing is ever sent or closed from here on.
  void Keep() {
    std::lock_guard lock(mutex_);
    finished_ = true;
    closed_ = true;
  }

  // The stream is over (or abandoned): send what is pending, and close once nothing is
  // borrowed.
  void Finish() {
    std::unique_lock lock(mutex_);
    finished_ = true;
    FlushLocked(lock);
    CloseIfDone(lock);
  }

 private:
  static constexpr size_t kBatch = 1024;

  // With mutex_ held: whether what is pending goes now rather than with a later batch.
  bool SendNow() const { return finished_ || waiting_ > 0 || pending_.size() >= kBatch; }

  // Send what is pending; a release on another thread meanwhile joins the next message.
  void FlushLocked(std::unique_lock<std::mutex>& lock) {
    if (flushing_) return;  // the thread already sending picks these up
    flushing_ = true;
    while (!pending_.empty()) {
      // sending_ and encoded_ are the flushing thread's alone; pending_ takes sending_'s room.
      sending_.swap(pending_);
      lock.unlock();
      EncodeFreeData(sending_, &encoded_);
      sending_.clear();
      const ByteSpan piece{encoded_.data(), static_cast<int64_t>(encoded_.size())};
      (void)conn_->SendTagged(tag_, {&piece, 1});  // a gone server freed everything itself
      lock.lock();
    }
    flushing_ = false;
  }

  void CloseIfDone(std::unique_lock<std::mutex>& lock) {
    if (!finished_ || borrowed_ > 0 || closed_ || flushing_) return;
    closed_ = true;
    lock.unlock();
    conn_->Close();
    lock.lock();
  }

  std::shared_ptr<Connection> conn_;
  uint64_t tag_;
  std::mutex mutex_;
  std::vector<uint64_t> pending_;
  std::vector<uint64_t> sending_;  // what FlushLocked sends, swapped with pending_
  std::vector<uint8_t> encoded_;   // its free_data body
  std::shared_ptr<BlockPool> body_blocks_ = std::make_shared<BlockPool>(kBatch);
  std::atomic<int64_t> borrowed_{0};
  int waiting_ = 0;  // readers inside a Wait
  bool finished_ = false;
  bool flushing_ = false;
  bool closed_ = false;
};

// The owner of a borrowed body: keeps the mapping, and returns the loan when the last array
// over it goes.
struct BorrowedBody {
  BorrowedBody(std::shared_ptr<const void> mapping, std::shared_ptr<Freer> freer,
               DistinctAddresses addresses)
      : mapping(std::move(mapping)), freer(std::move(freer)), addresses(std::move(addresses)) {}
  ~BorrowedBody() { freer->Return(addresses.view()); }

  std::shared_ptr<const void> mapping;
  std::shared_ptr<Freer> freer;
  DistinctAddresses addresses;
};

/// A borrowed body's owner, in memory its Freer recycles.
template <class Mapping>
std::shared_ptr<BorrowedBody> MakeBorrowedBody(Mapping mapping, const std::shared_ptr<Freer>& freer,
                                               DistinctAddresses addresses) {
  return std::allocate_shared<BorrowedBody>(PoolAllocator<BorrowedBody>(freer->body_blocks()),
                                            std::move(mapping), freer, std::move(addresses));
}

}  // namespace ferry::dipc::internal
