// The client's end of a UCX connection, its type-1 gets: a body's buffers read from the server's
// registered memory (RMA gets), posted at once and waited for later, or fetched in one call.
#if FERRY_WITH_UCX

#include <algorithm>
#include <limits>

#include "ferry/core/hex.hpp"
#include "transport/ucx/buffer_pool.hpp"
#include "transport/ucx/client_connection.hpp"

namespace ferry::transport::internal::ucx {

namespace {

using SteadyClock = std::chrono::steady_clock;

// After a get fails, how long to wait for the checked endpoint to say the peer died, so the
// error names the cause.
constexpr auto kFailureReportWait = std::chrono::seconds(1);

}  // namespace

// A fetch whose gets are posted: they progress on the progress thread (or finished inside the
// call that posted them) while the caller works; Wait finishes it as Fetch always did.
class ClientConnection::UcxFetch final : public FetchInFlight {
 public:
  UcxFetch(ClientConnection* conn, FetchedBody body, std::shared_ptr<Completion> done)
      : conn_(conn), body_(std::move(body)), done_(std::move(done)) {}

  Result<FetchedBody> Wait(std::chrono::milliseconds timeout) override {
    if (done_ == nullptr) return std::move(body_);  // nothing to read
    return conn_->FinishFetch(*this, timeout);
  }

  ClientConnection* conn_;
  FetchedBody body_;
  std::shared_ptr<Completion> done_;
};

Status ClientConnection::Fetch(std::span<const BufferRef> refs, std::chrono::milliseconds timeout,
                               FetchedBody* out) {
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<FetchInFlight> fetch, StartFetch(refs, timeout));
  FERRY_ASSIGN_OR_RAISE(*out, fetch->Wait(timeout));
  return Status::OK();
}

Result<std::unique_ptr<FetchInFlight>> ClientConnection::StartFetch(
    std::span<const BufferRef> refs, std::chrono::milliseconds /*timeout*/) {
  if (options_.remote_handle.empty()) {
    return Status::Invalid(
        "the server sent a type-1 body, but the URI has no remote_handle to read it with");
  }
  FetchedBody body;
  std::vector<uint64_t> offsets(refs.size());
  uint64_t total = 0;
  int count = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    const BufferRef& ref = refs[i];
    if (ref.address > std::numeric_limits<uint64_t>::max() - ref.length) {
      return Status::Invalid("buffer " + std::to_string(i) + " (address " + Hex(ref.address) +
                             ", length " + std::to_string(ref.length) +
                             ") overflows the address space");
    }
    total = (total + 7) / 8 * 8;
    if (ref.length > static_cast<uint64_t>(limits_.max_tagged_bytes) - total) {
      return Status::Invalid("the type-1 body's buffers add up to more than the limit of " +
                             std::to_string(limits_.max_tagged_bytes) + " bytes");
    }
    offsets[i] = total;
    total += ref.length;
    count += ref.length > 0 ? 1 : 0;
    body.buffers.push_back(BufferRef{offsets[i], ref.length});
  }
  std::shared_ptr<uint8_t> bytes = TakeBuffer(std::max<uint64_t>(total, 1));
  if (!bytes) {
    return Status::OutOfMemory("cannot allocate " + std::to_string(total) +
                               " bytes for type-1 buffers");
  }
  body.bytes = SharedBytes{bytes.get(), static_cast<int64_t>(total), bytes};
  body.borrowed = false;
  if (count == 0) return std::unique_ptr<FetchInFlight>(new UcxFetch(this, std::move(body), {}));
  FERRY_RETURN_NOT_OK(SendStatus("fetching"));
  auto done = std::make_shared<Completion>(count);
  {
    // Gets go from this thread under the worker's lock; the key is unpacked once per endpoint,
    // the first time it is needed.
    WorkerLock ucx = worker_->Lock();
    ucp_ep_h ep = traffic_ep();
    if (ep != nullptr && rkey_ep_ != ep) {
      ReleaseRemote();
      if (ucp_ep_rkey_unpack(ep, options_.remote_handle.data(), &rkey_) == UCS_OK) rkey_ep_ = ep;
    }
    const ucs_status_t st = ep == nullptr    ? UCS_ERR_NOT_CONNECTED
                            : rkey_ep_ != ep ? UCS_ERR_INVALID_PARAM
                                             : UCS_OK;
    for (size_t i = 0; i < refs.size(); ++i) {
      if (refs[i].length == 0) continue;
      if (st != UCS_OK) {
        done->Done(st);
        continue;
      }
      // The buffer is kept alive by the operation, whoever gives up waiting.
      GetRemote(ep, rkey_, refs[i].address, bytes.get() + offsets[i], refs[i].length,
                new Pending{done, bytes, worker_.get()});
    }
  }
  // CMA and shared-memory gets often finish inside the call; others progress on the progress
  // thread, which a connection failure tells to give up on them. The look naps (kLookNap)
  // when they did not (Completion::Wait): the server gets the core meanwhile. Handing them over
  // at once read 1,000-row type-1 batches over UCX's shared memory at 0.84x (20 pairs).
  if (!done->Wait(SteadyClock::now())) {
    Waiting(done);
    worker_->Wake();
  }
  return std::unique_ptr<FetchInFlight>(new UcxFetch(this, std::move(body), std::move(done)));
}

Result<FetchedBody> ClientConnection::FinishFetch(UcxFetch& fetch,
                                                  std::chrono::milliseconds timeout) {
  const std::shared_ptr<Completion>& done = fetch.done_;
  if (!done->Wait(*limits_.clock, limits_.clock->After(timeout))) {
    Fail("a get of type-1 buffers took longer than " + std::to_string(timeout.count()) +
             " ms (the server stopped, or the link is down?)",
         true);
    return Status::DeadlineExceeded("timed out after " + std::to_string(timeout.count()) +
                                    " ms waiting for a UCX get of type-1 buffers");
  }
  const ucs_status_t st = done->status();
  if (st == UCS_OK) return std::move(fetch.body_);
  // A get from a peer that died fails before the checked endpoint reports the death: give that
  // report a moment, so the error says what happened.
  std::unique_lock lock(mutex_);
  answer_changed_.wait_for(lock, kFailureReportWait, [&] { return gone_; });
  if (gone_) {
    return Status::Unavailable(
        "the peer closed the connection during a UCX get of type-1 buffers (" + failure_ + ")");
  }
  if (st == UCS_ERR_UNREACHABLE || st == UCS_ERR_INVALID_PARAM) {
    return UcxError(StatusCode::kIOError,
                    "the remote_handle in the URI cannot read the server's memory", st);
  }
  return UcxError(StatusCode::kIOError, "a UCX get of type-1 buffers failed", st);
}

void ClientConnection::ReleaseRemote() {
  if (rkey_ != nullptr) ucp_rkey_destroy(rkey_);
  rkey_ = nullptr;
  rkey_ep_ = nullptr;
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
