// What both ends of a UCX connection share, the sending half: metadata as Active Messages,
// bodies as tagged messages, each waited for up to the timeout by the connection's clock (a
// gathered body overlaps the next one's copy).
#if FERRY_WITH_UCX

#include <cstring>

#include "ferry/core/hex.hpp"
#include "transport/ucx/buffer_pool.hpp"
#include "transport/ucx/connection.hpp"

namespace ferry::transport::internal::ucx {

namespace {

using SteadyClock = std::chrono::steady_clock;

// How long a failed send waits for UCX to let go of the caller's bytes once its endpoint is
// force-closed: the close ends queued sends at once; a rendezvous to a dead peer it never ends.
constexpr auto kReleaseWait = std::chrono::milliseconds(100);

std::string Millis(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

// What a send owns until UCX lets go of it: the copy it sends from, if any, and a token whose
// release tells the sender that UCX no longer reads anything of the send.
struct SendHold {
  std::shared_ptr<uint8_t> copy;
  std::shared_ptr<const void> released;
  std::shared_ptr<const void> keep;  // the sender's bytes the send may read (a pair's header)
};

// Copies the pieces of `iov`, in order, to `into`.
void Gather(const std::vector<ucp_dt_iov_t>& iov, uint8_t* into) {
  for (const ucp_dt_iov_t& piece : iov) {
    std::memcpy(into, piece.buffer, piece.length);
    into += piece.length;
  }
}

}  // namespace

Status UcxConnection::SendStatus(const char* doing) {
  std::lock_guard lock(mutex_);
  if (closed_) return Status::Unavailable(std::string("the connection is closed (") + doing + ")");
  if (gone_) return Status::Unavailable(std::string("the connection is closed: ") + failure_);
  return Status::OK();
}

bool UcxConnection::OnFastLanes() {
  WorkerLock ucx = worker_->Lock();
  return fast_ep_ != nullptr;
}

Status UcxConnection::Transmit(bool active_message, uint64_t tag, std::span<const ByteSpan> pieces,
                               std::shared_ptr<const void> keep) {
  FERRY_ASSIGN_OR_RAISE(std::vector<ucp_dt_iov_t> iov, ToIov(pieces));
  FERRY_RETURN_NOT_OK(SendStatus(active_message ? "sending metadata" : "sending a message"));
  auto done = std::make_shared<Completion>();
  auto hold = std::make_shared<SendHold>();
  hold->keep = std::move(keep);
  size_t total = 0;
  for (const ucp_dt_iov_t& piece : iov) total += piece.length;
  if (total > 0 && total <= kCopyMaxBytes) {
    // A send queued behind an endpoint's wire-up is replayed later from the progress thread,
    // after a failed caller may have returned: small messages go from a copy the send owns.
    hold->copy = std::shared_ptr<uint8_t>(new uint8_t[total], std::default_delete<uint8_t[]>());
    Gather(iov, hold->copy.get());
    iov.assign(1, ucp_dt_iov_t{hold->copy.get(), total});
  } else if (!active_message && iov.size() > 1 && total >= kGatherMinBytes && !OnFastLanes()) {
    // UCX 1.13 sends a large I/O vector over TCP lanes four times slower than one buffer
    // (ucx_perftest tag_bw over TCP: 1.2 GiB/s with -D iov, 5.1 GiB/s without): one copy into a
    // recycled buffer costs less than that. Same-host fast lanes move vectors at full speed.
    hold->copy = TakeBuffer(total);
    if (hold->copy) {
      Gather(iov, hold->copy.get());
      iov.assign(1, ucp_dt_iov_t{hold->copy.get(), total});
    }  // out of memory for the copy: the vector goes as it is
  }
  const bool owns_bytes = hold->copy != nullptr;
  const bool staged = owns_bytes && total > kCopyMaxBytes;
  // A send that reads the caller's bytes signals this when UCX lets go of its request (its
  // callback ran, or the worker dropped it): until then UCX may still read them.
  std::shared_ptr<Completion> released;
  if (!owns_bytes) {
    released = std::make_shared<Completion>();
    hold->released.reset(static_cast<const void*>(nullptr),
                         [released](const void*) { released->Done(UCS_OK); });
  }
  if (staged) {
    // The copy above ran while the previous gathered message was still on the wire; that one
    // must end before this one goes, so at most one is in flight and its failure is reported
    // here, by the next send.
    FERRY_RETURN_NOT_OK(AwaitStaged());
  }
  {
    // From this thread: an eager send usually completes at once, with no trip through the
    // progress thread.
    WorkerLock ucx = worker_->Lock();
    ucp_ep_h ep = traffic_ep();
    if (ep == nullptr) {
      done->Done(UCS_ERR_NOT_CONNECTED);
    } else if (active_message) {
      SendActiveMessage(ep, kMetadataAmId, std::move(iov), new Pending{done, hold, worker_.get()});
    } else {
      SendTaggedMessage(ep, tag, std::move(iov), new Pending{done, hold, worker_.get()});
    }
  }
  hold.reset();
  if (staged && !done->Wait(SteadyClock::now())) {
    // Nothing of the caller's is read any more: return now, and let the caller make its next
    // message while this one is sent (TCP lanes, one core each way: the copy would otherwise
    // add to the send's time). The next gathered send or Close waits for it.
    {
      std::lock_guard lock(staged_mutex_);
      staged_ = std::move(done);
    }
    worker_->Wake();
    return Status::OK();
  }
  Status st = Await(done, total < kSendSpinMaxBytes);
  if (!st.ok() && !owns_bytes && !released->Wait(SteadyClock::now())) {
    // The wait was abandoned (the connection failed) while UCX still holds a send that reads the
    // caller's bytes; the failure force-closes its endpoint, which ends the sends queued on it:
    // wait for that, a little, before the caller may free them. A rendezvous whose peer died is
    // not ended by the close (UCX 1.13 and 1.22 kept one past 4 s), but its lanes are gone and
    // nothing reads its bytes again, so a longer wait would only delay the report.
    worker_->Wake();
    released->Wait(SteadyClock::now() + kReleaseWait);
  }
  return st;
}

Status UcxConnection::Flush() { return AwaitStaged(); }

Status UcxConnection::AwaitStaged() {
  std::shared_ptr<Completion> staged;
  {
    std::lock_guard lock(staged_mutex_);
    staged.swap(staged_);
  }
  if (!staged) return Status::OK();
  return Await(staged);
}

Status UcxConnection::Await(const std::shared_ptr<Completion>& done, bool spin) {
  if (spin && !done->Wait(SteadyClock::now())) {
    // The rest of an eager send (its later fragments) goes out as this thread progresses the
    // worker: handing it to the progress thread would cost a wake-up there and one back here.
    // Each Wait here naps (Completion::Wait) rather than spins: where both ends share two
    // cores, a sender that spins keeps the core its peer needs to answer. Over UCX's shared
    // memory, 1,000-row batches read at 0.46-0.59x this rate with a true 50 us spin, and at
    // 0.57-0.59x with one round of progress and then the hand-off (bench/dipc/small_batches).
    const auto until = SteadyClock::now() + kSendSpin;
    do {
      Pump();
    } while (!done->Wait(SteadyClock::now()) && SteadyClock::now() < until);
  }
  if (!spin || !done->Wait(SteadyClock::now())) {
    Waiting(done);
    worker_->Wake();  // what is left (a rendezvous, a full queue) progresses there
    if (!done->Wait(*limits_.clock, limits_.clock->After(limits_.timeout))) {
      // The peer took nothing for the whole timeout: stopped, or the link is down. The send
      // still reads the caller's bytes; failing the connection force-closes its endpoints,
      // which ends the send before we return.
      Fail("the peer took nothing for " + Millis(limits_.timeout) +
               " (stopped, or the link is down?)",
           true);
      worker_->Post([this] {
        if (ep_ != nullptr) {
          CloseEndpoint(*worker_, ep_, true, nullptr);
          ep_ = nullptr;
        }
      });
      // A force-closed endpoint ends its operations with an error; a rendezvous still waiting
      // for a peer's answer is left to UCX (nothing of ours sends from it any more: its lanes
      // are gone), so the wait is bounded (as above).
      done->Wait(SteadyClock::now() + kReleaseWait);
      return Status::DeadlineExceeded("the peer took nothing for " + Millis(limits_.timeout));
    }
  }
  const ucs_status_t st = done->status();
  if (st == UCS_OK) return Status::OK();
  FERRY_RETURN_NOT_OK(SendStatus("sending"));
  return UcxError(StatusCode::kUnavailable, "the connection is closed", st);
}

Status UcxConnection::Send(std::span<const ByteSpan> pieces) {
  // With pairs, metadata travels only as tagged messages: UCX keeps no order between an Active
  // Message and the tagged messages before it, and a lone metadata message (the end of the
  // stream) must not overtake the pairs still queued ahead of it.
  if (sends_pairs_.load(std::memory_order_acquire))
    return Transmit(false, kLoneMetadataTag, pieces);
  return Transmit(true, 0, pieces);
}

Status UcxConnection::SendMessageAndBody(std::span<const ByteSpan> metadata, uint64_t tag,
                                         std::span<const ByteSpan> body) {
  size_t body_bytes = 0;
  for (const ByteSpan& p : body) body_bytes += p.size > 0 ? static_cast<size_t>(p.size) : 0;
  if (!sends_pairs_.load(std::memory_order_acquire) || body_bytes > kPairMaxBodyBytes ||
      (tag & kPairTagBit) != 0) {
    return Connection::SendMessageAndBody(metadata, tag, body);
  }
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<std::vector<uint8_t>> head, PairHead(metadata));
  std::vector<ByteSpan> pieces;
  pieces.reserve(body.size() + 1);
  pieces.push_back({head->data(), static_cast<int64_t>(head->size())});
  pieces.insert(pieces.end(), body.begin(), body.end());
  return Transmit(false, tag | kPairTagBit, pieces, std::move(head));
}

Status UcxConnection::SendTagged(uint64_t tag, std::span<const ByteSpan> pieces) {
  if (tag == kHelloTag) return Status::Invalid("tag " + Hex(tag) + " is the UCX transport's own");
  return Transmit(false, tag, pieces);
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
