// What both ends of a UCX connection share, the ending half: a peer's failure seen, the waiters
// it releases, and the close of the endpoints and the worker (the intake is in connection.cpp).
#if FERRY_WITH_UCX

#include <algorithm>

#include "transport/ucx/connection.hpp"
#include "transport/ucx/tsan_order.hpp"

namespace ferry::transport::internal::ucx {

namespace {

using SteadyClock = std::chrono::steady_clock;

// How long a closing end waits for its endpoints to close gracefully (what it sent reaches the
// peer, and the peer learns of the close) before it stops waiting.
constexpr auto kCloseWait = std::chrono::seconds(2);
// How long a failed connection waits for receives that were landing before its inbox closes.
constexpr auto kSettleWait = std::chrono::milliseconds(500);

}  // namespace

void UcxConnection::OnEndpointError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* self = static_cast<UcxConnection*>(arg);
  std::string why =
      status == UCS_ERR_CONNECTION_RESET ? std::string("the peer closed the connection")
      : status == UCS_ERR_REJECTED
          ? std::string("the server refused the connection")
          : std::string("the peer went away (UCX: ") + ucs_status_string(status) + ")";
  // Runs inside progress, so the endpoints close from a task Fail posts.
  self->Fail(why, true);
}

void UcxConnection::Fail(const std::string& why, bool abort) {
  {
    std::lock_guard lock(mutex_);
    if (!gone_) {
      gone_ = true;
      gone_at_ = SteadyClock::now();
      failure_ = why;
    }
  }
  // Force-closing the endpoints ends what waits on them (a rendezvous to a dead peer); then
  // callers waiting on sends or gets return.
  worker_->Post(
      [this, abort] {
        if (abort) {
          ReleaseRemote();
          if (fast_ep_ != nullptr) {
            CloseEndpoint(*worker_, fast_ep_, true, nullptr);
            fast_ep_ = nullptr;
          }
          // The failed endpoint is ours to close; closing it by force ends the sends it still
          // holds, so that their callers learn UCX reads their bytes no more.
          if (ep_ != nullptr) {
            CloseEndpoint(*worker_, ep_, true, nullptr);
            ep_ = nullptr;
          }
        }
        ReleaseWaiters();
      },
      [this] { ReleaseWaiters(); });
  worker_->Wake();
}

void UcxConnection::Waiting(const std::shared_ptr<Completion>& done) {
  bool gone = false;
  {
    std::lock_guard lock(mutex_);
    gone = gone_;
    waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                  [](const std::weak_ptr<Completion>& w) { return w.expired(); }),
                   waiting_.end());
    if (!gone) waiting_.push_back(done);
  }
  if (gone) done->Abandon(UCS_ERR_CONNECTION_RESET);
}

void UcxConnection::ReleaseWaiters() {
  std::vector<std::weak_ptr<Completion>> waiting;
  {
    std::lock_guard lock(mutex_);
    waiting.swap(waiting_);
  }
  for (const auto& w : waiting) {
    if (auto done = w.lock()) done->Abandon(UCS_ERR_CONNECTION_RESET);
  }
}

std::chrono::milliseconds UcxConnection::SettleFailure() {
  std::string why;
  {
    std::lock_guard lock(mutex_);
    if (!gone_ || inbox_closed_) return std::chrono::milliseconds(-1);
    // What was landing when the peer went still lands (or fails): wait for it, a little. A
    // rendezvous from a dead peer may never end: the deadline closes the inbox regardless.
    const auto waited = SteadyClock::now() - gone_at_;
    if (landing_.load() > 0 && waited < kSettleWait) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(kSettleWait - waited) +
             std::chrono::milliseconds(1);
    }
    inbox_closed_ = true;
    why = failure_;
  }
  inbox_.Close(why);
  return std::chrono::milliseconds(-1);
}

bool UcxConnection::OverMetadataLimit(uint64_t length) {
  if (length <= static_cast<uint64_t>(limits_.max_message_bytes)) return false;
  Fail("a metadata message of " + std::to_string(length) + " bytes is over the limit of " +
           std::to_string(limits_.max_message_bytes) + " bytes",
       true);
  return true;
}

void UcxConnection::Close() { Shut(false); }

void UcxConnection::Abort() { Shut(true); }

void UcxConnection::Shut(bool force) {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
  }
  // A gathered message still on the wire gets the send timeout to finish, as a send waited for
  // would, not just the close's flush (kCloseWait). Nobody is left to hear of its failure but
  // the peer, which sees the message missing.
  if (!force) (void)AwaitStaged();
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  inbox_.Close("this end closed the connection");
  CloseEndpoints(force);
  std::call_once(torn_down_, [this] { TearDown(); });
}

void UcxConnection::CloseEndpoints(bool force) {
  const auto deadline = SteadyClock::now() + kCloseWait;
  bool gone = force;
  {
    std::lock_guard lock(mutex_);
    gone = gone || gone_;
  }
  // The checked endpoint is flushed before it is closed gracefully, and closed by force if the
  // flush does not finish in time (an endpoint still wiring up, a peer that stopped): a forced
  // close cancels what is queued on it, whereas a graceful close still flushing when the worker
  // is destroyed aborts the process in UCX 1.13 ("pending request ... should have been flushed").
  bool flushed = false;
  if (!gone) {
    auto flush = std::make_shared<Completion>();
    const bool ran = worker_->Run([this, flush] {
      if (ep_ != nullptr) {
        FlushEndpoint(ep_, new Pending{flush, nullptr, worker_.get()});
      } else {
        flush->Done(UCS_OK);
      }
    });
    flushed = ran && flush->Wait(deadline) && flush->status() == UCS_OK;
  }
  auto done = std::make_shared<Completion>(2);
  const bool ran = worker_->Run([this, done, flushed] {
    ReleaseRemote();
    // Everything sent was taken (sends wait for completion), so the fast endpoint closes at
    // once; the checked one closes gracefully, so the peer learns of it after what we sent.
    if (fast_ep_ != nullptr) CloseTracked(fast_ep_);
    fast_ep_ = nullptr;
    done->Done(UCS_OK);
    if (ep_ != nullptr) {
      bool gone_now = false;
      {
        std::lock_guard lock(mutex_);
        gone_now = gone_;
      }
      if (flushed && !gone_now) {
        // Not tracked in closing_: a graceful close waits on the peer, which may have stopped.
        // Its flush finds nothing left to send, so nothing is queued on the endpoint.
        CloseEndpoint(*worker_, ep_, false, new Pending{done, nullptr, worker_.get()});
      } else {
        CloseTracked(ep_);
        done->Done(UCS_OK);
      }
      ep_ = nullptr;
    } else {
      done->Done(UCS_OK);
    }
  });
  if (ran && flushed) done->Wait(deadline);
}

void UcxConnection::TearDown() {
  {
    std::unique_lock lock(pump_mutex_);
    pumpable_ = false;
  }
  worker_->Stop();
  // The thread is gone: this one owns the worker. Anything still open closes by force.
  {
    WorkerLock ucx = worker_->Lock();
    auto replaying = ReplayGuard();
    ReleaseRemote();
    if (fast_ep_ != nullptr) CloseTracked(fast_ep_);
    if (ep_ != nullptr) CloseTracked(ep_);
    fast_ep_ = ep_ = nullptr;
    // A forced close discards the endpoint's lanes at once: the replay of what they missed
    // happens here, under the guard.
    (void)ucp_worker_progress(worker_->handle());
  }
  // Receives still landing hold pointers into this object: let them settle (bounded), and the
  // endpoints' closes finish, then destroy the worker, which ends whatever did not.
  bool gone = false;
  {
    std::lock_guard lock(mutex_);
    gone = gone_;
  }
  const auto closed = [this] {
    return std::all_of(closing_.begin(), closing_.end(), [](const std::shared_ptr<Completion>& c) {
      return c->Wait(SteadyClock::now());
    });
  };
  // A gone peer's rendezvous never lands: no point waiting for it. A forced close needs no
  // answer from the peer, so it finishes within a few rounds of progress.
  worker_->Drain(
      [&] { return (gone || landing_.load() == 0) && closed(); },
      SteadyClock::now() + (gone ? std::chrono::milliseconds(200) : std::chrono::seconds(1)));
  worker_->Destroy();
}

void UcxConnection::CloseTracked(ucp_ep_h ep) {
  auto done = std::make_shared<Completion>();
  closing_.push_back(done);
  CloseEndpoint(*worker_, ep, true, new Pending{done, nullptr, worker_.get()});
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
