// What both ends of a UCX connection share: the Active Message intake and the waits on it (sends
// are in connection_send.cpp, failure and close in connection_close.cpp).
#if FERRY_WITH_UCX

#include "transport/ucx/connection.hpp"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "transport/ucx/buffer_pool.hpp"
#include "transport/ucx/tsan_order.hpp"

namespace ferry::transport::internal::ucx {

namespace {

// One receive in flight: where it lands and who hears of it.
struct Landing {
  std::shared_ptr<uint8_t> buffer;
  size_t length = 0;
  UcxConnection::Landed on_done;
  std::atomic<int>* landing = nullptr;
  Worker* worker = nullptr;  // tracks the request while it is in flight
  ucp_tag_recv_info_t info{};
  // A callback UCX fires inside the call that makes the request is finished by that caller.
  bool in_call = true;
  bool fired = false;
  ucs_status_t fired_status = UCS_OK;
  size_t fired_length = 0;
};

void Settled(Landing* l, ucs_status_t status, size_t length) {
  std::atomic<int>* landing = l->landing;
  if (status == UCS_OK) {
    SharedBytes bytes{l->buffer.get(), static_cast<int64_t>(length), l->buffer};
    l->on_done(status, std::move(bytes));
  } else {
    l->on_done(status, SharedBytes{});
  }
  delete l;
  --*landing;
}

// Whether the callback came inside the call that made the request (then the caller settles).
bool Deferred(Landing* l, ucs_status_t status, size_t length) {
  if (!l->in_call) return false;
  l->fired = true;
  l->fired_status = status;
  l->fired_length = length;
  return true;
}

void OnTagLanded(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                 void* user_data) {
  auto* l = static_cast<Landing*>(user_data);
  if (Deferred(l, status, info != nullptr ? info->length : l->length)) return;
  const bool released = l->worker->Untrack(request);
  Settled(l, status, info != nullptr ? info->length : l->length);
  if (!released) ucp_request_free(request);
}

void OnAmLanded(void* request, ucs_status_t status, size_t length, void* user_data) {
  auto* l = static_cast<Landing*>(user_data);
  if (Deferred(l, status, length)) return;
  const bool released = l->worker->Untrack(request);
  Settled(l, status, length);
  if (!released) ucp_request_free(request);
}

// A receive UCX did not finish at once: tracked until its callback, dropped if none comes.
void TrackLanding(void* request, Landing* l) {
  l->in_call = false;
  if (l->fired) {
    Settled(l, l->fired_status, l->fired_length);
    ucp_request_free(request);
    return;
  }
  l->worker->Track(request, [l] { Settled(l, UCS_ERR_CANCELED, 0); });
}

}  // namespace

std::string EncodeHello(uint8_t flags, const std::string& address, const std::string& trace) {
  std::string out(kHelloHeader, '\0');
  out[0] = 1;
  out[1] = static_cast<char>(trace.empty() ? flags : flags | kHelloTrace);
  out[2] = static_cast<char>(trace.size() & 0xFF);
  out[3] = static_cast<char>((trace.size() >> 8) & 0xFF);
  return out + trace + address;
}

bool DecodeHello(const SharedBytes& bytes, uint8_t* flags, std::string* address,
                 std::string* trace) {
  if (bytes.size < static_cast<int64_t>(kHelloHeader) || bytes.data[0] != 1) return false;
  *flags = bytes.data[1];
  const size_t trace_bytes =
      (*flags & kHelloTrace) != 0 ? (size_t{bytes.data[2]} | (size_t{bytes.data[3]} << 8)) : 0;
  const auto size = static_cast<size_t>(bytes.size);
  if (trace_bytes > size - kHelloHeader) return false;
  const auto* text = reinterpret_cast<const char*>(bytes.data);
  if (trace != nullptr) trace->assign(text + kHelloHeader, trace_bytes);
  address->assign(text + kHelloHeader + trace_bytes, size - kHelloHeader - trace_bytes);
  return true;
}

UcxConnection::UcxConnection(std::unique_ptr<Worker> worker, TransportLimits limits,
                             bool takes_metadata)
    : worker_(std::move(worker)),
      limits_(WithClock(std::move(limits))),
      inbox_(0, limits_.clock),
      spin_(limits_.spin),
      takes_metadata_(takes_metadata) {}

UcxConnection::~UcxConnection() {
  // Derived classes close first (their state goes before this base); this covers a connection
  // whose construction failed half-way.
  std::call_once(torn_down_, [this] { TearDown(); });
}

Status UcxConnection::StartWorker() {
  ucp_am_handler_param_t params{};
  params.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                      UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  params.id = kMetadataAmId;
  params.flags = UCP_AM_FLAG_WHOLE_MSG;
  params.cb = &UcxConnection::OnActiveMessage;
  params.arg = this;
  const ucs_status_t st = ucp_worker_set_am_recv_handler(worker_->handle(), &params);
  if (st != UCS_OK)
    return UcxError(StatusCode::kIOError, "cannot register the metadata handler", st);
  worker_->Start([this] {
    Poll();
    const std::chrono::milliseconds again = SettleFailure();
    if (std::exchange(poll_again_, false)) return std::chrono::milliseconds(0);
    return again;
  });
  return Status::OK();
}

ucs_status_t UcxConnection::OnActiveMessage(void* arg, const void* /*header*/, size_t header_length,
                                            void* data, size_t length,
                                            const ucp_am_recv_param_t* param) {
  return static_cast<UcxConnection*>(arg)->ActiveMessage(header_length, data, length, param);
}

ucs_status_t UcxConnection::ActiveMessage(size_t header_length, void* data, size_t length,
                                          const ucp_am_recv_param_t* param) {
  if (!takes_metadata_) {
    Fail(
        "the client sent an Active Message (metadata); the protocol has clients send only "
        "tagged messages",
        true);
    return UCS_OK;
  }
  if (header_length != 0) {
    Fail("a metadata Active Message carries a " + std::to_string(header_length) +
             "-byte header; the protocol defines none",
         true);
    return UCS_OK;
  }
  if (OverMetadataLimit(length)) return UCS_OK;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
    // Eager: the bytes are UCX's until we return. Metadata is small: copy it.
    Result<SharedBytes> copy = CopyFromUcxBuffer({data, static_cast<int64_t>(length)});
    if (!copy.ok()) {
      Fail("cannot keep a metadata message: " + copy.status().message(), true);
    } else {
      (void)inbox_.PushUntagged(std::move(*copy));  // fails only once closed: dropped then
    }
    return UCS_OK;
  }
  // Rendezvous: the bytes are still with the sender; fetch them into a buffer of ours.
  auto* l = new Landing{TakeBuffer(length), length, nullptr, &landing_, worker_.get()};
  if (!l->buffer) {
    delete l;
    Fail("cannot allocate " + std::to_string(length) + " bytes for a metadata message", true);
    return UCS_OK;
  }
  l->on_done = [this](ucs_status_t status, SharedBytes bytes) {
    if (status == UCS_OK) {
      (void)inbox_.PushUntagged(std::move(bytes));
    } else {
      Fail(std::string("a metadata message was lost on the way (UCX: ") +
               ucs_status_string(status) + ")",
           false);
    }
  };
  ++landing_;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.recv_am = OnAmLanded;
  rp.user_data = l;
  ucs_status_ptr_t request =
      ucp_am_recv_data_nbx(worker_->handle(), data, l->buffer.get(), length, &rp);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) {
    Settled(l, UCS_PTR_STATUS(request), length);
  } else {
    TrackLanding(request, l);
  }
  return UCS_OK;
}

void UcxConnection::Take(ucp_tag_message_h message, const ucp_tag_recv_info_t& info,
                         Landed on_done) {
  const bool fits = info.length <= static_cast<uint64_t>(limits_.max_tagged_bytes);
  std::shared_ptr<uint8_t> buffer = fits ? TakeBuffer(std::max<size_t>(info.length, 1)) : nullptr;
  // Over the limit, or without memory, the message still leaves UCX's queue, truncated into a
  // small buffer, and fails with UCS_ERR_MESSAGE_TRUNCATED.
  const size_t size = buffer ? info.length : 64;
  if (!buffer) buffer = TakeBuffer(size);
  auto* l =
      new Landing{std::move(buffer), info.length, std::move(on_done), &landing_, worker_.get()};
  ++landing_;
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  params.cb.recv = OnTagLanded;
  params.user_data = l;
  ucs_status_ptr_t request =
      l->buffer ? ucp_tag_msg_recv_nbx(worker_->handle(), l->buffer.get(), size, message, &params)
                : UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) {
    Settled(l, UCS_PTR_STATUS(request), info.length);
  } else {
    TrackLanding(request, l);
  }
}

void* UcxConnection::PostReceive(uint64_t tag, size_t size, Landed on_done) {
  auto* l = new Landing{TakeBuffer(std::max<size_t>(size, 1)), size, std::move(on_done), &landing_,
                        worker_.get()};
  ++landing_;
  if (!l->buffer) {
    Settled(l, UCS_ERR_NO_MEMORY, 0);
    return nullptr;
  }
  ucp_request_param_t params{};
  // The receive info gives the real length when the message is here already (no callback then).
  params.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO;
  params.cb.recv = OnTagLanded;
  params.user_data = l;
  params.recv_info.tag_info = &l->info;
  ucs_status_ptr_t request =
      ucp_tag_recv_nbx(worker_->handle(), l->buffer.get(), size, tag, ~uint64_t{0}, &params);
  if (request == nullptr) {
    Settled(l, UCS_OK, l->info.length);
    return nullptr;
  }
  if (UCS_PTR_IS_ERR(request)) {
    Settled(l, UCS_PTR_STATUS(request), size);
    return nullptr;
  }
  TrackLanding(request, l);
  return request;
}

void UcxConnection::Pump() {
  std::shared_lock lock(pump_mutex_);
  if (!pumpable_) return;
  WorkerLock ucx = worker_->Lock();
  auto replaying = ReplayGuard();
  for (int round = 0; round < 16 && ucp_worker_progress(worker_->handle()) != 0; ++round) {
  }
  Poll();
  worker_->CallerProgressed();
}

namespace {

int64_t MessageBytes(const SharedBytes& m) { return m.size; }
int64_t MessageBytes(const TaggedMessage& m) { return m.payload.size; }

}  // namespace

void UcxConnection::DrainAfterTake(int64_t bytes) {
  if (limits_.spin.count() <= 0 || !drains_on_take_.load(std::memory_order_relaxed)) return;
  const int64_t fragments =
      bytes <= 0 ? 1 : (bytes + kQueueFragmentBytes - 1) / kQueueFragmentBytes;
  const int64_t before = taken_fragments_.fetch_add(fragments, std::memory_order_relaxed);
  if (before + fragments < kDrainFragments) return;
  taken_fragments_.store(0, std::memory_order_relaxed);
  Pump();
}

template <typename Pop>
auto UcxConnection::PumpWhileWaiting(std::chrono::milliseconds timeout, Pop pop)
    -> decltype(pop(timeout)) {
  auto r = pop(std::chrono::milliseconds(0));
  // A message taken without waiting: the stream is ahead of this caller, and the sender may be
  // held by a full shared-memory FIFO that only this worker's progress empties (drains_on_take_).
  if (r.ok()) DrainAfterTake(MessageBytes(*r));
  if (r.ok() || r.status().code() != StatusCode::kDeadlineExceeded || timeout.count() <= 0)
    return r;
  // With a spin, the waiting caller progresses the worker itself until its message lands or
  // the spin is spent, so what arrives meanwhile wakes no thread; then it sleeps in the pop.
  std::chrono::steady_clock::time_point until;
  {
    std::lock_guard lock(spin_mutex_);
    until = spin_.Until(std::chrono::steady_clock::now(), timeout);
  }
  do {
    Pump();
    r = pop(std::chrono::milliseconds(0));
    if (r.ok() || r.status().code() != StatusCode::kDeadlineExceeded) break;
  } while (std::chrono::steady_clock::now() < until);
  if (!r.ok() && r.status().code() == StatusCode::kDeadlineExceeded) {
    worker_->CallerSleeps();
    r = pop(timeout);
  }
  if (r.ok() && limits_.spin.count() > 0) {
    // A wait's end is when its message came, near enough. (An end that never spins learns
    // nothing: a server's receives skip the lock.)
    std::lock_guard lock(spin_mutex_);
    spin_.Arrived(std::chrono::steady_clock::now());
  }
  return r;
}

Result<SharedBytes> UcxConnection::Receive(std::chrono::milliseconds timeout) {
  return PumpWhileWaiting(timeout,
                          [this](std::chrono::milliseconds t) { return inbox_.PopUntagged(t); });
}

Result<TaggedMessage> UcxConnection::ReceiveTagged(uint64_t want, uint64_t mask,
                                                   std::chrono::milliseconds timeout) {
  return PumpWhileWaiting(
      timeout, [&](std::chrono::milliseconds t) { return inbox_.PopTagged(want, mask, t); });
}

Status UcxConnection::ShareRegion(const std::shared_ptr<Region>& region) {
  if (region == nullptr) return Status::Invalid("the region is NULL");
  std::lock_guard lock(mutex_);
  shared_.push_back(region);
  return Status::OK();
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
