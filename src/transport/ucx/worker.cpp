// Over 600 lines: the UCX worker before its split into worker, endpoint and listener files.
// The UCX worker: context and worker set-up, the event-driven progress thread, connection set-up
// and teardown, and the pipeline that probes each tag message, receives it into an allocation of
// its size and hands it, in arrival order, to its connection's inbox.
#if FERRY_WITH_UCX

#include "transport/ucx/worker.hpp"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace ferry::transport::ucx {

namespace {

constexpr size_t kTrailerSize = sizeof(uint64_t);
constexpr auto kCloseAckWait = std::chrono::seconds(2);
constexpr auto kEndpointCloseWait = std::chrono::seconds(5);
constexpr auto kFailureReportWait = std::chrono::seconds(2);

// Keeps what an operation touches alive until UCX reports it done, whoever waits or gives up.
struct Pending {
  std::shared_ptr<Completion> done;
  std::shared_ptr<const void> keep;
};

void OnSendOrGetDone(void* request, ucs_status_t status, void* user_data) {
  auto* pending = static_cast<Pending*>(user_data);
  pending->done->Done(status);
  delete pending;
  ucp_request_free(request);
}

// An operation UCX may finish at once (nullptr), fail at once, or finish later in the callback.
void Settle(ucs_status_ptr_t request, Pending* pending) {
  if (request == nullptr || UCS_PTR_IS_ERR(request)) {
    pending->done->Done(UCS_PTR_STATUS(request));
    delete pending;
  }
}

void FreeRequest(void* request, ucs_status_t /*status*/, void* /*user_data*/) {
  ucp_request_free(request);
}

// Large receive buffers are recycled, process-wide: a fresh 64 MiB allocation costs an mmap and
// 16,384 page faults, about as long as moving its bytes over shared memory. At most kMaxCached
// bytes wait here; a buffer is reused only for a message at least half its size.
class BufferPool {
 public:
  static constexpr size_t kMinPooled = size_t{1} << 20;
  static constexpr size_t kMaxCached = size_t{256} << 20;

  // Leaked on purpose: buffers may come back during static destruction.
  static BufferPool& Get() {
    static auto* pool = new BufferPool();
    return *pool;
  }

  std::shared_ptr<uint8_t> Take(size_t size) {
    if (size < kMinPooled) {
      const size_t rounded = (std::max<size_t>(size, 1) + 63) / 64 * 64;
      return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)),
                                      [](uint8_t* p) { std::free(p); });
    }
    size_t capacity = 0;
    uint8_t* data = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->first >= size && it->first / 2 <= size &&
            (best == free_.end() || it->first < best->first)) {
          best = it;
        }
      }
      if (best != free_.end()) {
        capacity = best->first;
        data = best->second;
        cached_ -= capacity;
        free_.erase(best);
      }
    }
    if (data == nullptr) {
      capacity = (size + kMinPooled - 1) / kMinPooled * kMinPooled;
      data = static_cast<uint8_t*>(std::aligned_alloc(64, capacity));
      if (data == nullptr) return nullptr;
    }
    return std::shared_ptr<uint8_t>(data, [capacity](uint8_t* p) { Get().Give(p, capacity); });
  }

 private:
  void Give(uint8_t* data, size_t capacity) {
    {
      std::lock_guard lock(mutex_);
      if (cached_ + capacity <= kMaxCached) {
        free_.emplace_back(capacity, data);
        cached_ += capacity;
        return;
      }
    }
    std::free(data);
  }

  std::mutex mutex_;
  std::vector<std::pair<size_t, uint8_t*>> free_;
  size_t cached_ = 0;
};

}  // namespace

std::shared_ptr<uint8_t> TakeBuffer(size_t size) { return BufferPool::Get().Take(size); }

struct Worker::Incoming {
  uint64_t tag = 0;
  int64_t want = -1;           // the receive it was taken for, or -1
  void* request = nullptr;     // a posted receive still in flight (for cancelling)
  ucp_tag_recv_info_t info{};  // a posted receive's message, once it matched
  size_t length = 0;
  std::shared_ptr<uint8_t> buffer;
  bool done = false;
  ucs_status_t status = UCS_OK;
};

void Completion::Done(ucs_status_t status) {
  std::lock_guard lock(mutex_);
  if (status != UCS_OK && status_ == UCS_OK) status_ = status;
  if (--remaining_ <= 0) done_.notify_all();
}

bool Completion::Wait(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return done_.wait_until(lock, deadline, [&] { return remaining_ <= 0; });
}

void Completion::Wait() {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return remaining_ <= 0; });
}

ucs_status_t Completion::status() {
  std::lock_guard lock(mutex_);
  return status_;
}

Result<std::shared_ptr<Worker>> Worker::Create() {
  std::shared_ptr<Worker> worker(new Worker());
  FERRY_RETURN_NOT_OK(worker->Init());
  return worker;
}

Status Worker::Init() {
  ucp_config_t* config = nullptr;
  // UCX's own environment (UCX_TLS, UCX_NET_DEVICES, ...) applies; ferry needs none of it.
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return Status(EIO, std::string("UCX: ") + ucs_status_string(st));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 1;
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) return Status(EIO, std::string("UCX: ucp_init: ") + ucs_status_string(st));

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_MULTI;
  st = ucp_worker_create(context_, &worker_params, &worker_);
  if (st != UCS_OK) {
    return Status(EIO, std::string("UCX: ucp_worker_create: ") + ucs_status_string(st));
  }
  ucp_address_t* address = nullptr;
  size_t address_length = 0;
  st = ucp_worker_get_address(worker_, &address, &address_length);
  if (st != UCS_OK) {
    return Status(EIO, std::string("UCX: ucp_worker_get_address: ") + ucs_status_string(st));
  }
  address_.assign(reinterpret_cast<const char*>(address), address_length);
  ucp_worker_release_address(worker_, address);
  int event_fd = -1;
  st = ucp_worker_get_efd(worker_, &event_fd);
  if (st != UCS_OK) {
    return Status(EIO, std::string("UCX: ucp_worker_get_efd: ") + ucs_status_string(st));
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return Status(errno, "UCX worker: epoll or eventfd failed");
  for (int fd : {event_fd, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return Status(errno, "UCX worker: epoll_ctl failed");
    }
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::OK();
}

Worker::~Worker() {
  if (thread_.joinable()) {
    stop_ = true;
    Wake();
    thread_.join();
  }
  // The progress thread is gone: this thread now owns the worker. Cancel posted receives,
  // then force-close what is left.
  for (auto& in : posted_) {
    if (in->done || in->request == nullptr) continue;
    ucp_request_cancel(worker_, in->request);
    while (!in->done) ucp_worker_progress(worker_);
  }
  posted_.clear();
  std::vector<std::shared_ptr<Peer>> left;
  for (auto& [id, peer] : peers_) left.push_back(peer);
  if (only_peer_) left.push_back(only_peer_);
  for (auto& peer : left) {
    for (auto& region : peer->regions) {
      if (region->rkey != nullptr) ucp_rkey_destroy(region->rkey);
      region->rkey = nullptr;
    }
    for (ucp_ep_h* ep : {&peer->fast_ep, &peer->ep}) {
      if (*ep == nullptr) continue;
      ucp_request_param_t params{};
      params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      params.flags = UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t request = ucp_ep_close_nbx(*ep, &params);
      if (UCS_PTR_IS_PTR(request)) {
        while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(worker_);
        ucp_request_free(request);
      }
      *ep = nullptr;
    }
  }
  if (listener_ != nullptr) {
    for (ucp_conn_request_h r : requests_) ucp_listener_reject(listener_, r);
    ucp_listener_destroy(listener_);
  }
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  incoming_.clear();
  if (context_ != nullptr) ucp_cleanup(context_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Worker::Post(std::function<void()> task) {
  {
    std::lock_guard lock(tasks_mutex_);
    tasks_.push_back(std::move(task));
  }
  Wake();
}

void Worker::Wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

void Worker::Loop() {
  while (!stop_) {
    std::vector<std::function<void()>> tasks;
    {
      std::lock_guard lock(tasks_mutex_);
      tasks.swap(tasks_);
    }
    for (auto& task : tasks) task();
    while (ucp_worker_progress(worker_) != 0) {
    }
    HandleFailures();
    PollMessages();
    SettlePosted();
    AcceptPending();
    {
      std::lock_guard lock(tasks_mutex_);
      if (!tasks_.empty()) continue;
    }
    // Sleep until the network or a poster wakes us; BUSY means events arrived since progress.
    if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) continue;
    epoll_event events[2];
    const int n = epoll_wait(epoll_fd_, events, 2, -1);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) {
        uint64_t count = 0;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &count, sizeof(count));
      }
    }
  }
}

void Worker::PollMessages() {
  Peer* client = only_peer_ != nullptr && only_peer_->on_demand ? only_peer_.get() : nullptr;
  if (client == nullptr) {
    // A server takes everything as it comes: its clients send only small messages.
    ucp_tag_recv_info_t info{};
    while (ucp_tag_message_h m = ucp_tag_probe_nb(worker_, 0, 0, 1, &info)) Take(m, info, -1);
  } else {
    PollClient(*client);
  }
  // Deliver in arrival order: a large message still landing holds back the ones behind it, so
  // untagged messages and the close marker never overtake what was taken before them.
  while (!incoming_.empty() && incoming_.front()->done) {
    Deliver(*incoming_.front());
    incoming_.pop_front();
  }
}

void Worker::PollClient(Peer& peer) {
  ucp_tag_recv_info_t info{};
  // The transport's own messages (metadata among them) always come in.
  while (ucp_tag_message_h m =
             ucp_tag_probe_nb(worker_, kControlTagBase, kTransportTagMask, 1, &info)) {
    Take(m, info, -1);
  }
  // Then what a receive waits for, found by its tag and mask wherever it is in the queue.
  std::vector<Peer::Want> wants;
  bool closed = false;
  {
    std::lock_guard lock(peer.mutex);
    for (const Peer::Want& w : peer.wants) {
      // A dead peer's rendezvous bodies never finish landing: stop waiting for them.
      if (!w.exhausted && (!w.in_flight || peer.failed)) wants.push_back(w);
    }
    // Once the peer closed, what it sent before is all here; once it died, what is still
    // landing never will.
    closed = peer.peer_closed && (incoming_.empty() || peer.failed);
  }
  bool exhausted = false;
  for (const Peer::Want& w : wants) {
    ucp_tag_message_h m = ucp_tag_probe_nb(worker_, w.tag, w.mask, 1, &info);
    {
      std::lock_guard lock(peer.mutex);
      auto it = std::find_if(peer.wants.begin(), peer.wants.end(),
                             [&](const Peer::Want& x) { return x.id == w.id; });
      if (it != peer.wants.end()) {
        if (m != nullptr) {
          it->in_flight = true;
        } else if (closed) {
          // The peer closed and nothing sent before its close marker matches: none will come.
          it->exhausted = exhausted = true;
        }
      }
    }
    if (m != nullptr) Take(m, info, w.id);
  }
  if (exhausted) peer.changed.notify_all();
  // Read ahead while little is held: a rendezvous body stays with its sender until taken, so
  // a client that stops reading makes the server wait instead of filling this process.
  for (;;) {
    {
      std::lock_guard lock(peer.mutex);
      if (peer.held_bytes >= kInboxBytes) break;
    }
    ucp_tag_message_h m = ucp_tag_probe_nb(worker_, 0, 0, 1, &info);
    if (m == nullptr) break;
    Take(m, info, -1);
  }
}

void Worker::OnReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                        void* user_data) {
  auto* incoming = static_cast<Incoming*>(user_data);
  incoming->status = status;
  if (info != nullptr) incoming->info = *info;
  incoming->request = nullptr;
  incoming->done = true;
  ucp_request_free(request);
}

void Worker::Expect(const std::shared_ptr<Peer>& peer, uint64_t tag, int64_t size) {
  if (size < 0 || size > kMaxExpected) return;
  Post([this, peer, tag, size] {
    if (!peer->on_demand || peer->data_ep() == nullptr) return;
    auto same = [&](const std::unique_ptr<Incoming>& in) { return in->tag == tag; };
    if (std::any_of(incoming_.begin(), incoming_.end(), same) ||
        std::any_of(posted_.begin(), posted_.end(), same)) {
      return;  // read ahead already, or posted twice
    }
    auto in = std::make_unique<Incoming>();
    in->tag = tag;
    in->length = static_cast<size_t>(size) + kTrailerSize;
    {
      std::lock_guard lock(peer->mutex);
      for (const TaggedMessage& m : peer->tagged) {
        if (m.tag == tag) return;
      }
      peer->held_bytes += static_cast<int64_t>(in->length);
    }
    in->buffer = TakeBuffer(in->length);
    ucp_request_param_t params{};
    params.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO;
    params.cb.recv = &Worker::OnReceived;
    params.user_data = in.get();
    params.recv_info.tag_info = &in->info;
    ucs_status_ptr_t request = in->buffer ? ucp_tag_recv_nbx(worker_, in->buffer.get(), in->length,
                                                             tag, ~uint64_t{0}, &params)
                                          : UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (request == nullptr || UCS_PTR_IS_ERR(request)) {
      in->status = UCS_PTR_STATUS(request);
      in->done = true;
    } else {
      in->request = request;
    }
    posted_.push_back(std::move(in));
  });
}

void Worker::DropPosted(uint64_t want, uint64_t mask) {
  Post([this, want, mask] {
    for (auto& in : posted_) {
      // A finished request is freed already; its result is settled below.
      if (!in->done && in->request != nullptr && (in->tag & mask) == (want & mask)) {
        ucp_request_cancel(worker_, in->request);
      }
    }
  });
}

void Worker::SettlePosted() {
  if (posted_.empty() || only_peer_ == nullptr) return;
  Peer& peer = *only_peer_;
  for (auto it = posted_.begin(); it != posted_.end();) {
    Incoming& in = **it;
    if (!in.done) {
      ++it;
      continue;
    }
    const size_t posted = in.length;
    if (in.status == UCS_OK) {
      in.length = in.info.length;  // at most what was posted
      {
        std::lock_guard lock(peer.mutex);
        peer.held_bytes -= static_cast<int64_t>(posted - in.length);
      }
      Deliver(in);
    } else {
      std::string failure;
      if (in.status == UCS_ERR_MESSAGE_TRUNCATED) {
        char tag[24];
        std::snprintf(tag, sizeof(tag), "0x%016llx", static_cast<unsigned long long>(in.tag));
        failure = std::string("the body message tagged ") + tag + " is larger than the " +
                  std::to_string(posted - kTrailerSize) + " bytes its metadata announces";
      }
      {
        std::lock_guard lock(peer.mutex);
        peer.held_bytes -= static_cast<int64_t>(posted);
        if (!failure.empty()) {
          // The message is gone (UCX consumed it): this stream cannot go on.
          peer.failed = peer.peer_closed = true;
          peer.failure = failure;
        }
      }
      if (!failure.empty()) {
        peer.changed.notify_all();
        Wake();  // another round, to tell waiting receives nothing more will come
      }
    }
    it = posted_.erase(it);
  }
}

void Worker::Take(ucp_tag_message_h message, const ucp_tag_recv_info_t& info, int64_t want) {
  auto in = std::make_unique<Incoming>();
  in->tag = info.sender_tag;
  in->length = info.length;
  in->want = want;
  // A lying peer must not make us allocate without bound: larger messages are dropped.
  constexpr size_t kMaxMessage = size_t{1} << 36;
  if (info.length <= kMaxMessage) in->buffer = TakeBuffer(info.length);
  if (!IsTransportTag(in->tag) && only_peer_ != nullptr) {
    std::lock_guard lock(only_peer_->mutex);
    only_peer_->held_bytes += static_cast<int64_t>(info.length);
  }
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  params.cb.recv = &Worker::OnReceived;
  params.user_data = in.get();
  uint8_t scratch[64];
  // Without memory the message is still taken off the wire (truncated), then dropped.
  void* into = in->buffer ? static_cast<void*>(in->buffer.get()) : scratch;
  const size_t size = in->buffer ? info.length : sizeof(scratch);
  ucs_status_ptr_t request = ucp_tag_msg_recv_nbx(worker_, into, size, message, &params);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) {
    in->status = UCS_PTR_STATUS(request);
    in->done = true;
  }
  if (!in->buffer) {
    if (!in->done) {
      while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(worker_);
    }
    in->status = UCS_ERR_NO_MEMORY;
    in->done = true;
  }
  incoming_.push_back(std::move(in));
}

void Worker::Deliver(Incoming& in) {
  const bool ok = in.status == UCS_OK && in.length >= kTrailerSize;
  if (only_peer_ != nullptr && (in.want >= 0 || (!ok && !IsTransportTag(in.tag)))) {
    std::lock_guard lock(only_peer_->mutex);
    auto& wants = only_peer_->wants;
    auto it = std::find_if(wants.begin(), wants.end(),
                           [&](const Peer::Want& w) { return w.id == in.want; });
    // Taken: the receive finds it in the inbox. Lost: it may look again.
    if (it != wants.end()) it->in_flight = false;
    if (!ok && !IsTransportTag(in.tag)) only_peer_->held_bytes -= static_cast<int64_t>(in.length);
  }
  if (!ok) return;  // a failed endpoint's leftovers
  const size_t size = in.length - kTrailerSize;
  uint64_t id = 0;
  std::memcpy(&id, in.buffer.get() + size, sizeof(id));
  std::shared_ptr<Peer> peer = only_peer_;
  if (!peer) {
    auto it = peers_.find(id);
    if (it == peers_.end()) return;  // a connection closed here already
    peer = it->second;
  }
  SharedBytes payload{in.buffer.get(), static_cast<int64_t>(size), in.buffer};
  if (in.tag == kAddressTag) {
    OnAddress(peer, payload);
    return;
  }
  uint64_t value = 0;
  if (size >= sizeof(value)) std::memcpy(&value, payload.data, sizeof(value));
  bool ack = false;
  {
    std::lock_guard lock(peer->mutex);
    switch (in.tag) {
      case kUntaggedTag:
        peer->untagged.push_back(std::move(payload));
        break;
      case kHelloTag:
        peer->id = value;
        if (size > sizeof(value)) {
          peer->peer_address.assign(reinterpret_cast<const char*>(payload.data) + sizeof(value),
                                    size - sizeof(value));
        }
        peer->hello = true;
        break;
      case kReadyTag:
        peer->ready = true;
        break;
      case kCloseTag:
        peer->peer_closed = true;
        ack = !peer->failed;
        break;
      case kCloseAckTag:
        peer->close_acked = true;
        break;
      case kRegionTag:
        if (size >= 2 * sizeof(uint64_t)) {
          auto region = std::make_shared<RemoteRegion>();
          std::memcpy(&region->base, payload.data, sizeof(uint64_t));
          std::memcpy(&region->size, payload.data + sizeof(uint64_t), sizeof(uint64_t));
          region->packed_rkey.assign(reinterpret_cast<const char*>(payload.data) + 16, size - 16);
          peer->regions.push_back(std::move(region));
        }
        break;
      default:
        peer->tagged.push_back(TaggedMessage{in.tag, std::move(payload)});
        break;
    }
  }
  peer->changed.notify_all();
  if (ack) SendControl(*peer, kCloseAckTag, 0);
}

void Worker::OnAddress(const std::shared_ptr<Peer>& peer, const SharedBytes& address) {
  if (peer->ep == nullptr || peer->fast_ep != nullptr) return;
  if (address.size > 0) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t*>(address.data);
    // Peer-failure handling would take the shared-memory lanes away; the socket-address
    // endpoint watches the peer instead.
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    if (ucp_ep_create(worker_, &params, &peer->fast_ep) != UCS_OK) peer->fast_ep = nullptr;
  }
  SendControl(*peer, kReadyTag, 0);
  {
    std::lock_guard lock(accept_mutex_);
    accepted_.push_back(peer);
  }
  accept_changed_.notify_all();
}

void Worker::HandleFailures() {
  std::vector<Peer*> failed;
  failed.swap(failed_);
  for (Peer* raw : failed) {
    std::shared_ptr<Peer> peer = only_peer_.get() == raw ? only_peer_ : nullptr;
    for (auto& [id, p] : peers_) {
      if (p.get() == raw) peer = p;
    }
    // Cancels what waits on the fast endpoint (a body the dead peer will never take).
    if (peer && peer->fast_ep != nullptr) {
      ForceClose(peer->fast_ep);
      peer->fast_ep = nullptr;
    }
  }
}

void Worker::ForceClose(ucp_ep_h ep) {
  if (ep == nullptr) return;
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = UCP_EP_CLOSE_FLAG_FORCE;
  params.cb.send = FreeRequest;
  ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &params);
  (void)request;  // freed by its callback, or done already
}

void Worker::SendBytes(Peer& peer, ucp_ep_h ep, uint64_t tag, std::string payload) {
  if (ep == nullptr) return;
  const uint64_t id = peer.id;
  payload.append(reinterpret_cast<const char*>(&id), sizeof(id));
  auto buffer = std::make_shared<std::string>(std::move(payload));
  auto* pending = new Pending{std::make_shared<Completion>(), buffer};
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  params.cb.send = OnSendOrGetDone;
  params.user_data = pending;
  Settle(ucp_tag_send_nbx(ep, buffer->data(), buffer->size(), tag, &params), pending);
}

void Worker::SendControl(Peer& peer, uint64_t tag, uint64_t value) {
  if (peer.data_ep() == nullptr) return;
  auto buffer = std::make_shared<uint64_t[]>(2);
  buffer[0] = value;
  buffer[1] = peer.id;
  auto* pending = new Pending{std::make_shared<Completion>(), buffer};
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  params.cb.send = OnSendOrGetDone;
  params.user_data = pending;
  Settle(ucp_tag_send_nbx(peer.data_ep(), buffer.get(), 2 * sizeof(uint64_t), tag, &params),
         pending);
}

ucp_ep_params_t Worker::EndpointParams(Peer* peer) const {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &Worker::OnEndpointError;
  params.err_handler.arg = peer;
  return params;
}

void Worker::OnEndpointError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  {
    std::lock_guard lock(peer->mutex);
    peer->failed = true;
    peer->peer_closed = true;
    peer->failure = ucs_status_string(status);
  }
  peer->changed.notify_all();
  // Runs inside progress, on the progress thread: act after it returns.
  if (peer->worker != nullptr) peer->worker->failed_.push_back(peer);
}

void Worker::OnConnectionRequest(ucp_conn_request_h request, void* arg) {
  static_cast<Worker*>(arg)->requests_.push_back(request);
}

Result<int> Worker::Listen(const sockaddr* addr, socklen_t addrlen) {
  Completion done;
  ucs_status_t st = UCS_OK;
  int port = 0;
  Post([&] {
    ucp_listener_params_t params{};
    params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.sockaddr.addr = addr;
    params.sockaddr.addrlen = addrlen;
    params.conn_handler.cb = &Worker::OnConnectionRequest;
    params.conn_handler.arg = this;
    st = ucp_listener_create(worker_, &params, &listener_);
    if (st == UCS_OK) {
      ucp_listener_attr_t attr{};
      attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
      st = ucp_listener_query(listener_, &attr);
      if (attr.sockaddr.ss_family == AF_INET) {
        port = ntohs(reinterpret_cast<const sockaddr_in*>(&attr.sockaddr)->sin_port);
      } else if (attr.sockaddr.ss_family == AF_INET6) {
        port = ntohs(reinterpret_cast<const sockaddr_in6*>(&attr.sockaddr)->sin6_port);
      }
    }
    done.Done(UCS_OK);
  });
  done.Wait();
  if (st != UCS_OK) return Status(EADDRNOTAVAIL, std::string("UCX: ") + ucs_status_string(st));
  {
    std::lock_guard lock(accept_mutex_);
    listening_ = true;
  }
  return port;
}

void Worker::AcceptPending() {
  std::vector<ucp_conn_request_h> requests;
  requests.swap(requests_);
  for (ucp_conn_request_h request : requests) {
    bool listening = false;
    {
      std::lock_guard lock(accept_mutex_);
      listening = listening_;
    }
    if (!listening) {
      ucp_listener_reject(listener_, request);
      continue;
    }
    auto peer = std::make_shared<Peer>();
    peer->worker = this;
    ucp_ep_params_t params = EndpointParams(peer.get());
    params.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
    params.conn_request = request;
    if (ucp_ep_create(worker_, &params, &peer->ep) != UCS_OK) continue;
    peer->id = next_id_++;
    peers_[peer->id] = peer;
    // The hello names the connection and carries this worker's address; Accept returns the
    // peer once the client answers with its own (OnAddress).
    std::string hello(sizeof(uint64_t), '\0');
    std::memcpy(hello.data(), &peer->id, sizeof(uint64_t));
    SendBytes(*peer, peer->ep, kHelloTag, hello + address_);
  }
}

Result<std::shared_ptr<Peer>> Worker::Accept(std::chrono::milliseconds timeout) {
  std::unique_lock lock(accept_mutex_);
  const bool ready =
      accept_changed_.wait_for(lock, timeout, [&] { return !accepted_.empty() || !listening_; });
  if (!listening_) return Status(ECANCELED, "the UCX listener is closed");
  if (!ready) return Status(ETIMEDOUT, "timed out waiting for a UCX connection");
  std::shared_ptr<Peer> peer = std::move(accepted_.front());
  accepted_.pop_front();
  return peer;
}

void Worker::StopListening() {
  {
    std::lock_guard lock(accept_mutex_);
    if (!listening_) return;
    listening_ = false;
  }
  accept_changed_.notify_all();
  Completion done;
  Post([&] {
    if (listener_ != nullptr) {
      for (ucp_conn_request_h r : requests_) ucp_listener_reject(listener_, r);
      requests_.clear();
      ucp_listener_destroy(listener_);
      listener_ = nullptr;
    }
    done.Done(UCS_OK);
  });
  done.Wait();
}

Result<std::shared_ptr<Peer>> Worker::Connect(const sockaddr* addr, socklen_t addrlen,
                                              const std::string& address, bool same_host,
                                              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto peer = std::make_shared<Peer>();
  peer->worker = this;
  Completion created;
  ucs_status_t st = UCS_OK;
  Post([&] {
    only_peer_ = peer;
    peer->on_demand = true;
    ucp_ep_params_t params = EndpointParams(peer.get());
    params.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
    params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr = addr;
    params.sockaddr.addrlen = addrlen;
    st = ucp_ep_create(worker_, &params, &peer->ep);
    if (st != UCS_OK) peer->ep = nullptr;
    created.Done(UCS_OK);
  });
  created.Wait();
  if (st != UCS_OK) {
    return Status(ECONNREFUSED, "could not connect to the UCX listener at " + address + ": " +
                                    ucs_status_string(st));
  }
  std::unique_lock lock(peer->mutex);
  peer->changed.wait_until(lock, deadline, [&] { return peer->hello || peer->failed; });
  if (peer->hello && !peer->failed) {
    lock.unlock();
    Post([this, peer, same_host] {
      if (same_host && !peer->peer_address.empty() && peer->ep != nullptr) {
        ucp_ep_params_t params{};
        params.field_mask =
            UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        params.address = reinterpret_cast<const ucp_address_t*>(peer->peer_address.data());
        params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
        if (ucp_ep_create(worker_, &params, &peer->fast_ep) != UCS_OK) peer->fast_ep = nullptr;
      }
      // On the fast endpoint, so the server makes its own before anything else arrives here.
      SendBytes(*peer, peer->data_ep(), kAddressTag, peer->fast_ep != nullptr ? address_ : "");
    });
    lock.lock();
    peer->changed.wait_until(lock, deadline, [&] { return peer->ready || peer->failed; });
  }
  if (peer->ready && !peer->failed) return peer;
  Status error = peer->failed
                     ? Status(ECONNREFUSED, "could not connect to the UCX listener at " + address +
                                                ": " + peer->failure)
                     : Status(ETIMEDOUT, "timed out waiting for the UCX listener at " + address);
  lock.unlock();
  Close(peer);
  return error;
}

Status Worker::Send(const std::shared_ptr<Peer>& peer, uint64_t tag,
                    std::span<const ByteSpan> pieces) {
  std::vector<ucp_dt_iov_t> iov;
  iov.reserve(pieces.size() + 1);
  for (const ByteSpan& p : pieces) {
    if (p.size < 0 || (p.size > 0 && p.data == nullptr)) {
      return Status::Invalid("a message piece is NULL or has a negative size");
    }
    if (p.size > 0) iov.push_back({const_cast<void*>(p.data), static_cast<size_t>(p.size)});
  }
  auto done = std::make_shared<Completion>();
  uint64_t trailer = 0;
  Post([&, done] {
    if (peer->data_ep() == nullptr) {
      done->Done(UCS_ERR_NOT_CONNECTED);
      return;
    }
    trailer = peer->id;
    iov.push_back({&trailer, sizeof(trailer)});
    auto* pending = new Pending{done, nullptr};
    ucp_request_param_t params{};
    params.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
    params.cb.send = OnSendOrGetDone;
    params.user_data = pending;
    params.datatype = ucp_dt_make_iov();
    Settle(ucp_tag_send_nbx(peer->data_ep(), iov.data(), iov.size(), tag, &params), pending);
  });
  // Unbounded: the endpoint's error handling (peer mode) fails the send if the peer goes away.
  done->Wait();
  const ucs_status_t st = done->status();
  if (st == UCS_OK) return Status::OK();
  return Status(EPIPE,
                std::string("the connection is closed (UCX: ") + ucs_status_string(st) + ")");
}

Status Worker::Get(const std::shared_ptr<Peer>& peer,
                   const std::vector<std::shared_ptr<RemoteRegion>>& regions,
                   std::span<const BufferRef> refs, const std::vector<uint64_t>& offsets,
                   const std::shared_ptr<uint8_t>& dest,
                   std::chrono::steady_clock::time_point deadline) {
  int count = 0;
  for (const BufferRef& ref : refs) count += ref.length > 0 ? 1 : 0;
  if (count == 0) return Status::OK();
  auto done = std::make_shared<Completion>(count);
  std::vector<BufferRef> wanted(refs.begin(), refs.end());
  Post([peer, regions, wanted = std::move(wanted), offsets, dest, done] {
    for (size_t i = 0; i < wanted.size(); ++i) {
      if (wanted[i].length == 0) continue;
      RemoteRegion& region = *regions[i];
      ucs_status_t st = peer->data_ep() == nullptr ? UCS_ERR_NOT_CONNECTED : UCS_OK;
      if (st == UCS_OK && region.rkey == nullptr) {
        st = ucp_ep_rkey_unpack(peer->data_ep(), region.packed_rkey.data(), &region.rkey);
      }
      ucp_ep_h ep = peer->data_ep();
      if (st != UCS_OK) {
        done->Done(st);
        continue;
      }
      auto* pending = new Pending{done, dest};
      ucp_request_param_t params{};
      params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      params.cb.send = OnSendOrGetDone;
      params.user_data = pending;
      Settle(ucp_get_nbx(ep, dest.get() + offsets[i], wanted[i].length, wanted[i].address,
                         region.rkey, &params),
             pending);
    }
  });
  if (!done->Wait(deadline)) {
    return Status(ETIMEDOUT, "timed out waiting for a UCX get of type-1 buffers");
  }
  const ucs_status_t st = done->status();
  if (st == UCS_OK) return Status::OK();
  // A get from a peer that died fails before the socket-address endpoint reports the death:
  // give that report a moment, so the error says what happened.
  std::unique_lock lock(peer->mutex);
  peer->changed.wait_for(lock, kFailureReportWait, [&] { return peer->failed; });
  if (peer->failed) {
    return Status(EPIPE,
                  "the peer closed the connection during a UCX get of type-1 buffers (UCX: " +
                      peer->failure + ")");
  }
  return Status(EIO, std::string("a UCX get of type-1 buffers failed: ") + ucs_status_string(st));
}

void Worker::Close(const std::shared_ptr<Peer>& peer) {
  bool marker = false;
  {
    std::lock_guard lock(peer->mutex);
    if (peer->closed) return;
    peer->closed = true;
    marker = !peer->peer_closed && !peer->failed;
  }
  peer->changed.notify_all();
  if (marker && Send(peer, kCloseTag, {}).ok()) {
    // The acknowledgement proves the peer took everything sent before the marker off the wire.
    std::unique_lock lock(peer->mutex);
    peer->changed.wait_for(lock, kCloseAckWait, [&] { return peer->close_acked || peer->failed; });
  }
  auto done = std::make_shared<Completion>();
  Post([this, peer, done] { CloseEndpoint(peer, done); });
  done->Wait(std::chrono::steady_clock::now() + kEndpointCloseWait);
}

void Worker::CloseEndpoint(const std::shared_ptr<Peer>& peer,
                           const std::shared_ptr<Completion>& done) {
  for (auto& region : peer->regions) {
    if (region->rkey != nullptr) ucp_rkey_destroy(region->rkey);
    region->rkey = nullptr;
  }
  peers_.erase(peer->id);
  ForceClose(peer->fast_ep);
  peer->fast_ep = nullptr;
  if (peer->ep == nullptr) {
    done->Done(UCS_OK);
    return;
  }
  auto* pending = new Pending{done, peer};
  ucp_request_param_t params{};
  params.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  // Always forced: what this end sent is through (sends return on completion, and the close
  // acknowledgement followed it), and a graceful close aborts in UCX 1.13 while a receive from
  // this endpoint (a rendezvous body the peer is still sending) is in flight.
  params.flags = UCP_EP_CLOSE_FLAG_FORCE;
  params.cb.send = OnSendOrGetDone;
  params.user_data = pending;
  ucp_ep_h ep = peer->ep;
  peer->ep = nullptr;
  Settle(ucp_ep_close_nbx(ep, &params), pending);
}

}  // namespace ferry::transport::ucx

#endif  // FERRY_WITH_UCX
