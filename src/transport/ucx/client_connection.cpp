// The client's end of a UCX connection: connecting, on-demand body intake and teardown (its
// type-1 gets are in client_fetch.cpp).
#if FERRY_WITH_UCX

#include "transport/ucx/client_connection.hpp"

#include <algorithm>
#include <cerrno>

#include "ferry/core/hex.hpp"
#include "ferry/core/host_address.hpp"

namespace ferry::transport::internal::ucx {

Result<std::unique_ptr<ClientConnection>> ClientConnection::Connect(const sockaddr* addr,
                                                                    socklen_t addrlen,
                                                                    const std::string& address,
                                                                    bool same_host, bool other_host,
                                                                    const ConnectOptions& options) {
  const std::shared_ptr<ferry::Clock> clock = WithClock(options.limits).clock;
  // Without a remote_handle there is nothing to get, and the context needs no remote memory
  // access (which would let the server reach this process's memory). A loopback address's
  // server is on this host: its context leaves the virtual interfaces out, as the listener's
  // does, so that a bridge or veth taken down between this context and its worker (other
  // processes' network namespaces coming and going) does not fail the connection.
  FERRY_ASSIGN_OR_RAISE(
      std::shared_ptr<Context> context,
      Context::Make(!options.remote_handle.empty(),
                    IsLoopbackAddress(addr) ? OnHostDevices() : std::string(), !other_host));
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<Worker> worker, Worker::Make(std::move(context)));
  std::unique_ptr<ClientConnection> conn(new ClientConnection(std::move(worker), options));
  conn->peer_ = address;
  auto up = std::make_shared<Completion>();
  {
    // Before the thread starts, this thread owns the worker.
    auto registering = RegisterGuard();
    Result<ucp_ep_h> ep = ConnectToSocket(conn->worker_->handle(), addr, addrlen,
                                          &UcxConnection::OnEndpointError, conn.get());
    if (!ep.ok()) {
      return ep.status().WithContext("could not connect to the UCX listener at " + address);
    }
    conn->ep_ = *ep;
    // A flush completes once the endpoint is wired up with the server (or failed).
    FlushEndpoint(conn->ep_, new Pending{up, nullptr, conn->worker_.get()});
  }
  FERRY_RETURN_NOT_OK(conn->StartWorker());
  // A refusal ends the wait at once; an address that does not answer (another host's, a
  // stopped server's) is given up after the connect timeout, counted from here: this process's
  // own start of UCX is not the peer's (UCX 1.22 installs its memory hooks in a process's first
  // context, 50 ms each: 0.4 s on an idle 2-core VM, over a second on a loaded one).
  const ferry::Clock::time_point deadline = clock->After(
      options.connect_timeout.count() > 0 ? options.connect_timeout : options.limits.timeout);
  if (!up->Wait(*clock, deadline)) {
    // Nothing was sent on an endpoint still wiring up: closed by force at once, where a graceful
    // close would wait for a flush the silent peer never answers (kCloseWait).
    conn->Abort();
    return Status::DeadlineExceeded("timed out connecting to the UCX listener at " + address);
  }
  {
    std::lock_guard lock(conn->mutex_);
    if (up->status() != UCS_OK || conn->gone_) {
      // A wire-up that failed on its own (not refused by a listener) found nothing to accept it:
      // said so, where the error callback's wording is for a peer that was there.
      const std::string why =
          up->status() == UCS_ERR_REJECTED ? std::string("the server refused the connection")
          : up->status() != UCS_OK
              ? std::string("nothing accepted it (no server listens there, or it is gone; UCX: ") +
                    ucs_status_string(up->status()) + ")"
              : conn->failure_;
      return Status::Unavailable("could not connect to the UCX listener at " + address + ": " +
                                 why);
    }
  }
  if (options.extensions) FERRY_RETURN_NOT_OK(conn->Hello(same_host));
  return conn;
}

ClientConnection::~ClientConnection() { Close(); }

Status ClientConnection::Hello(bool same_host) {
  const uint8_t flags = kHelloErrors | kHelloPairs | kHelloReuse |
                        (same_host ? kHelloFastPath : 0) |
                        (options_.buffer_lists ? kHelloBufferLists : 0);
  const std::string hello =
      EncodeHello(flags, same_host ? worker_->address() : std::string(), options_.trace);
  const ByteSpan piece{hello.data(), static_cast<int64_t>(hello.size())};
  FERRY_RETURN_NOT_OK(Transmit(false, kHelloTag, {&piece, 1}));
  std::unique_lock lock(mutex_);
  limits_.clock->WaitFor(answer_changed_, lock, limits_.timeout,
                         [&] { return answered_ || gone_; });
  if (!answered_) {
    if (gone_) return Status::Unavailable("the server closed the connection: " + failure_);
    return Status::DeadlineExceeded(
        "the server did not answer ferry's hello (the URI says ferry=1: is it ferry?)");
  }
  const bool fast = (granted_ & kHelloFastPath) != 0 && !server_address_.empty();
  const std::string server = server_address_;
  lock.unlock();
  if (fast) {
    auto wired = std::make_shared<Completion>();
    worker_->Run([this, &server, wired] {
      // Without it the checked endpoint carries everything, as for any peer.
      if (Result<ucp_ep_h> ep = ConnectToWorker(worker_->handle(), server); ep.ok()) {
        fast_ep_ = *ep;
        drains_on_take_ = HasSharedMemoryLane(fast_ep_);
        FlushEndpoint(fast_ep_, new Pending{wired, nullptr, worker_.get()});
      } else {
        wired->Done(UCS_OK);
      }
    });
    // Wired up before any traffic: an endpoint without error handling that fails mid-wire-up
    // trips UCX 1.13. One that did not wire up is closed, and the checked endpoint carries
    // everything instead, as for any peer (the server's messages reach this worker either way).
    if (!wired->Wait(*limits_.clock, limits_.clock->After(limits_.timeout)) ||
        wired->status() != UCS_OK) {
      worker_->Run([this] {
        if (fast_ep_ != nullptr) CloseTracked(fast_ep_);
        fast_ep_ = nullptr;
        drains_on_take_ = false;
      });
    }
  }
  extensions_ = true;
  return Status::OK();
}

void ClientConnection::Poll() {
  ucp_tag_recv_info_t info{};
  // The server's answer to our hello (sent only if we said hello) always comes in.
  while (ucp_tag_message_h m =
             ucp_tag_probe_nb(worker_->handle(), kHelloTag, ~uint64_t{0}, 1, &info)) {
    TakeFor(m, info, -1);
  }
  std::vector<Want> wants;
  bool gone = false;
  {
    std::lock_guard lock(mutex_);
    gone = gone_;
    for (const Want& w : wants_) {
      if (!w.in_flight) wants.push_back(w);
    }
  }
  if (gone) {
    answer_changed_.notify_all();
    // The peer is done: all it sent is here or landing. Take it all, whatever the read-ahead.
    while (ucp_tag_message_h m = ucp_tag_probe_nb(worker_->handle(), 0, 0, 1, &info)) {
      TakeFor(m, info, -1);
    }
    return;
  }
  for (const Want& w : wants) {
    ucp_tag_message_h m = ucp_tag_probe_nb(worker_->handle(), w.tag, w.mask, 1, &info);
    if (m == nullptr) continue;
    {
      std::lock_guard lock(mutex_);
      for (Want& x : wants_) {
        if (x.id == w.id) x.in_flight = true;
      }
    }
    TakeFor(m, info, w.id);
  }
  if (read_ahead_hook_) read_ahead_hook_(*worker_);
  // Read ahead while little is held: a rendezvous body stays with its sender until taken, so a
  // client that stops reading makes the server wait instead of filling this process. A few MiB
  // a round, and none while another thread waits for the worker's lock: taking a body can cost
  // a fresh buffer and a copy, and a reader fallen behind by a few hundred large bodies would
  // otherwise wait tens of ms for this loop before it could post or take the one it wants.
  for (int64_t taken = 0;;) {
    if (taken >= kReadAheadPerPoll) {
      poll_again_ = true;  // the rest in the next round, after the lock is let go
      break;
    }
    if (worker_->LockWanted()) {
      // Its holder polls next if it pumps, and not if it sends, and no event announces what
      // already waits in UCX's queue: the holder's release wakes the progress thread for it
      // (not a poll at once here, which would take the lock back from its waiter).
      worker_->WakeOnRelease();
      break;
    }
    {
      std::lock_guard lock(mutex_);
      if (held_bytes_ >= kReadAheadBytes) break;
    }
    ucp_tag_message_h m = ucp_tag_probe_nb(worker_->handle(), 0, 0, 1, &info);
    if (m == nullptr) break;
    taken += static_cast<int64_t>(info.length);
    TakeFor(m, info, -1);
  }
}

void ClientConnection::SetReadAheadHookForTest(std::function<void(Worker&)> hook) {
  WorkerLock ucx = worker_->Lock();
  read_ahead_hook_ = std::move(hook);
}

void ClientConnection::TakeFor(ucp_tag_message_h message, const ucp_tag_recv_info_t& info,
                               int64_t want) {
  const uint64_t tag = info.sender_tag;
  const int64_t held = tag == kHelloTag ? 0 : static_cast<int64_t>(info.length);
  {
    std::lock_guard lock(mutex_);
    held_bytes_ += held;
  }
  Take(message, info, [this, tag, held, want](ucs_status_t status, SharedBytes bytes) {
    Landed(tag, held, want, status, std::move(bytes));
  });
}

void ClientConnection::Landed(uint64_t tag, int64_t held, int64_t want, ucs_status_t status,
                              SharedBytes bytes) {
  {
    std::lock_guard lock(mutex_);
    for (Want& w : wants_) {
      if (w.id == want) w.in_flight = false;
    }
    if (status != UCS_OK) held_bytes_ -= held;
  }
  if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    Fail("the server sent a " + std::to_string(held) + "-byte message tagged " + Hex(tag) +
             ", over the limit of " + std::to_string(limits_.max_tagged_bytes) + " bytes",
         true);
    return;
  }
  if (status != UCS_OK) {
    Fail(std::string("a message from the server was lost on the way (UCX: ") +
             ucs_status_string(status) + ")",
         false);
    return;
  }
  if (tag == kHelloTag) {
    {
      std::lock_guard lock(mutex_);
      answered_ = DecodeHello(bytes, &granted_, &server_address_);
      takes_pairs_.store(answered_ && (granted_ & kHelloPairs) != 0, std::memory_order_release);
      reusable_.store(answered_ && (granted_ & kHelloReuse) != 0, std::memory_order_release);
    }
    answer_changed_.notify_all();
    return;
  }
  // Only a server that granted pairs sends them; from any other, these bits are the protocol's
  // reserved ones, and the session refuses the tag.
  const bool pairs = takes_pairs_.load(std::memory_order_acquire);
  if (pairs && tag == kLoneMetadataTag) {
    {
      std::lock_guard lock(mutex_);
      held_bytes_ -= bytes.size;  // metadata, not a body read ahead
    }
    if (OverMetadataLimit(static_cast<uint64_t>(bytes.size))) return;
    (void)inbox_.PushUntagged(std::move(bytes));
    return;
  }
  if (pairs && (tag & kPairTagBit) != 0) {
    (void)SplitPair(tag, bytes);
    return;
  }
  (void)inbox_.PushTagged(TaggedMessage{tag, std::move(bytes)});
}

bool ClientConnection::SplitPair(uint64_t tag, const SharedBytes& bytes) {
  Result<PairParts> parts = ucx::SplitPair(tag, bytes, limits_.max_message_bytes);
  if (!parts.ok()) {
    Fail("the server sent a malformed pair: " + parts.status().message(), true);
    return false;
  }
  {
    // Only the body counts as read ahead from here on: it is what the reader pops by tag.
    std::lock_guard lock(mutex_);
    held_bytes_ -= bytes.size - parts->body.size;
  }
  // The body first: a reader that sees the metadata finds its body queued already.
  (void)inbox_.PushTagged(TaggedMessage{tag & ~kPairTagBit, std::move(parts->body)});
  (void)inbox_.PushUntagged(std::move(parts->metadata));
  return true;
}

Result<TaggedMessage> ClientConnection::ReceiveTagged(uint64_t want, uint64_t mask,
                                                      std::chrono::milliseconds timeout) {
  Result<TaggedMessage> r = inbox_.PopTagged(want, mask, std::chrono::milliseconds(0));
  if (r.ok()) DrainAfterTake(r->payload.size);
  if (!r.ok() && r.status().code() == StatusCode::kDeadlineExceeded) {
    // Look for it in UCX's queue (it may lie behind bodies the read-ahead left there): here
    // first, then, while we wait, on the progress thread.
    int64_t id = 0;
    {
      std::lock_guard lock(mutex_);
      id = ++next_want_;
      wants_.push_back(Want{id, want, mask});
    }
    Pump();
    r = inbox_.PopTagged(want, mask, std::chrono::milliseconds(0));
    if (!r.ok() && r.status().code() == StatusCode::kDeadlineExceeded && timeout.count() > 0) {
      worker_->Wake();
      r = inbox_.PopTagged(want, mask, timeout);
    }
    std::lock_guard lock(mutex_);
    wants_.erase(
        std::remove_if(wants_.begin(), wants_.end(), [&](const Want& w) { return w.id == id; }),
        wants_.end());
  }
  if (r.ok()) {
    bool was_full = false;
    {
      std::lock_guard lock(mutex_);
      was_full = held_bytes_ >= kReadAheadBytes;
      held_bytes_ -= r->payload.size;
    }
    // A receive posted for this sequence number under another body type is not needed now.
    DropPosted(want, mask);
    if (was_full) worker_->Wake();  // room in the read-ahead: take what waits behind
  }
  return r;
}

void ClientConnection::Expect(uint64_t tag, int64_t size) {
  if (size < 0 || size > limits_.max_tagged_bytes) return;
  // Taken already by the read-ahead: a receive posted now would match nothing and wait to be
  // cancelled (DropPosted), a trip through the progress thread for every such body.
  if (inbox_.HoldsTagged(tag)) return;
  auto entry = std::make_shared<Posted>();
  {
    std::lock_guard lock(posted_mutex_);
    if (!posted_.emplace(tag, entry).second) return;  // posted already
  }
  {
    std::lock_guard lock(mutex_);
    held_bytes_ += size;
  }
  // Posted from this thread under the worker's lock: no trip through the progress thread. The
  // receive settles there, or here at once if the body is in already.
  WorkerLock ucx = worker_->Lock();
  UcxConnection::Landed landed = [this, tag, size, entry](ucs_status_t status, SharedBytes bytes) {
    {
      std::lock_guard lock(posted_mutex_);
      entry->settled = true;
      if (auto it = posted_.find(tag); it != posted_.end() && it->second == entry) {
        posted_.erase(it);
      }
    }
    {
      std::lock_guard lock(mutex_);
      held_bytes_ -= size - (status == UCS_OK ? bytes.size : 0);
    }
    if (status == UCS_OK) {
      (void)inbox_.PushTagged(TaggedMessage{tag, std::move(bytes)});
    } else if (status == UCS_ERR_MESSAGE_TRUNCATED) {
      // UCX consumed the message: this stream cannot go on.
      Fail("the body message tagged " + Hex(tag) + " is larger than the " + std::to_string(size) +
               " bytes its metadata announces",
           true);
    }
  };
  // A body in UCX's queue already (the read-ahead stopped short of it) is taken as the read-ahead
  // takes one, its length from the probe. A receive posted for it would complete at once, and
  // UCX 1.13 then leaves the receive's info unset: the body would read as 0 bytes.
  ucp_tag_recv_info_t info{};
  if (ucp_tag_message_h m = ucp_tag_probe_nb(worker_->handle(), tag, ~uint64_t{0}, 1, &info)) {
    if (info.length > static_cast<uint64_t>(size)) {
      // Taken off the wire all the same, and failed as a receive of `size` bytes would be.
      Take(m, info, [landed](ucs_status_t status, const SharedBytes&) {
        landed(status == UCS_OK ? UCS_ERR_MESSAGE_TRUNCATED : status, SharedBytes{});
      });
    } else {
      Take(m, info, std::move(landed));
    }
    return;
  }
  void* request = PostReceive(tag, static_cast<size_t>(size), std::move(landed));
  std::lock_guard lock(posted_mutex_);
  if (!entry->settled) entry->request = request;
}

void ClientConnection::DropPosted(uint64_t want, uint64_t mask) {
  {
    std::lock_guard lock(posted_mutex_);
    bool any = false;
    for (const auto& [tag, entry] : posted_) {
      any |= (tag & mask) == (want & mask) && !entry->settled;
    }
    if (!any) return;
  }
  // Cancelled on the progress thread, where receives settle: a request seen unsettled there is
  // still alive.
  worker_->Post([this, want, mask] {
    std::vector<void*> stale;
    {
      std::lock_guard lock(posted_mutex_);
      for (const auto& [tag, entry] : posted_) {
        if ((tag & mask) == (want & mask) && entry->request != nullptr && !entry->settled) {
          stale.push_back(entry->request);
        }
      }
    }
    // Each cancelled receive settles in its callback (UCS_ERR_CANCELED), maybe right here.
    for (void* request : stale) ucp_request_cancel(worker_->handle(), request);
  });
}

void ClientConnection::TearDown() {
  worker_->Stop();
  WorkerLock ucx = worker_->Lock();
  std::vector<void*> posted;
  {
    std::lock_guard lock(posted_mutex_);
    for (const auto& [tag, entry] : posted_) {
      if (entry->request != nullptr && !entry->settled) posted.push_back(entry->request);
    }
  }
  // Each settles in its callback (during the base's drain, or at once).
  for (void* request : posted) ucp_request_cancel(worker_->handle(), request);
  ucx.unlock();
  UcxConnection::TearDown();
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
