// The UCX listener: accepts each client on a worker of its own.
#if FERRY_WITH_UCX

#include "transport/ucx/listener.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "ferry/core/host_address.hpp"
#include "transport/ucx/endpoint.hpp"
#include "transport/ucx/region.hpp"
#include "transport/ucx/server_connection.hpp"

namespace ferry::transport::internal::ucx {

namespace {

// This process's network interfaces as a worker would find them: each one's name, address family
// and whether it is up, sorted. A worker opens every device its context found; one made ahead
// while an interface was there would take a client, then fail it with a reset, where a worker
// made now fails at once and the client is refused with the cause. A spare is used only while
// this is what it was when the spare was made.
std::string DeviceSignature() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return {};
  std::vector<std::string> entries;
  for (const ifaddrs* i = all; i != nullptr; i = i->ifa_next) {
    if (i->ifa_name == nullptr) continue;
    entries.push_back(std::string(i->ifa_name) + "/" +
                      std::to_string(i->ifa_addr != nullptr ? i->ifa_addr->sa_family : -1) + "/" +
                      ((i->ifa_flags & IFF_UP) != 0 ? "up" : "down"));
  }
  freeifaddrs(all);
  std::sort(entries.begin(), entries.end());
  std::string out;
  for (const std::string& e : entries) out.append(e).append(";");
  return out;
}

}  // namespace

Result<std::unique_ptr<UcxListener>> UcxListener::Make(const sockaddr* addr, socklen_t addrlen,
                                                       const std::string& host,
                                                       TransportLimits limits) {
  // Each connection gets a worker of this context, which opens every network device the context
  // found at its start: one that has gone since (a bridge or VPN taken down) fails every later
  // worker. A loopback listener's clients are all on this host, so its context leaves the
  // virtual interfaces out, and no such interface's coming or going reaches it.
  const std::string devices = IsLoopbackAddress(addr) ? OnHostDevices() : std::string();
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Context> context,
                        Context::Make(limits.remote_memory, devices));
  std::unique_ptr<UcxListener> listener(new UcxListener(context, std::move(limits)));
  FERRY_ASSIGN_OR_RAISE(listener->worker_, Worker::Make(context));
  UcxListener* self = listener.get();
  ucs_status_t st = UCS_OK;
  int port = 0;
  // Before the thread starts, this thread owns the worker.
  [&] {
    auto registering = RegisterGuard();
    ucp_listener_params_t params{};
    params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.sockaddr.addr = addr;
    params.sockaddr.addrlen = addrlen;
    params.conn_handler.cb = &UcxListener::OnConnectionRequest;
    params.conn_handler.arg = self;
    st = ucp_listener_create(self->worker_->handle(), &params, &self->listener_);
    if (st != UCS_OK) {
      self->listener_ = nullptr;
      return;
    }
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    st = ucp_listener_query(self->listener_, &attr);
    if (attr.sockaddr.ss_family == AF_INET) {
      port = ntohs(reinterpret_cast<const sockaddr_in*>(&attr.sockaddr)->sin_port);
    } else if (attr.sockaddr.ss_family == AF_INET6) {
      port = ntohs(reinterpret_cast<const sockaddr_in6*>(&attr.sockaddr)->sin6_port);
    }
  }();
  if (st != UCS_OK) return UcxError(StatusCode::kUnavailable, "cannot listen", st);
  // Its poll accepts: each connection's new worker and endpoint register descriptors.
  listener->worker_->Start(
      [self] {
        self->AcceptPending();
        return std::chrono::milliseconds(-1);
      },
      true);
  const bool v6 = host.find(':') != std::string::npos;
  listener->address_ = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  {
    std::lock_guard lock(listener->mutex_);
    listener->listening_ = true;
  }
  // Its thread's first round may have come before it listened: one more makes the first spare.
  listener->worker_->Wake();
  return listener;
}

UcxListener::~UcxListener() {
  Close();
  worker_->Destroy();
}

void UcxListener::OnConnectionRequest(ucp_conn_request_h request, void* arg) {
  static_cast<UcxListener*>(arg)->requests_.push_back(request);
}

void UcxListener::AcceptPending() {
  std::vector<ucp_conn_request_h> requests;
  requests.swap(requests_);
  for (ucp_conn_request_h request : requests) {
    bool listening = false;
    {
      std::lock_guard lock(mutex_);
      listening = listening_;
    }
    if (!listening || listener_ == nullptr) {
      if (listener_ != nullptr) ucp_listener_reject(listener_, request);
      continue;
    }
    const std::string peer = RequestingAddress(request);
    // Accepting moves the request's descriptor from this worker's handlers to the connection's
    // worker; UCX before 1.17 would replay an event this worker missed on it to the new handler
    // (ReplayGuard). A round of progress first replays what was missed while it is still ours.
    {
      auto replaying = ReplayGuard();
      (void)ucp_worker_progress(worker_->handle());
    }
    std::unique_ptr<Worker> spare = std::move(spare_);
    // Made before an interface came or went: dropped, so this client's worker is made now and
    // fails (or not) as any would.
    if (spare != nullptr && DeviceSignature() != spare_devices_) {
      spare.reset();
      ++spares_dropped_;
    }
    {
      std::lock_guard lock(mutex_);
      spare_ready_ = false;
    }
    const bool on_spare = spare != nullptr;
    bool taken = false;
    Result<std::unique_ptr<ServerConnection>> conn =
        ServerConnection::Accept(context_, request, limits_, &taken, std::move(spare));
    if (!conn.ok()) {
      // Refused now, so that the client fails at once rather than waiting out its timeout (a
      // request UCX took is answered by UCX).
      if (!taken) ucp_listener_reject(listener_, request);
      if (limits_.refused) {
        limits_.refused("refused the UCX connection from " + (peer.empty() ? "a client" : peer) +
                        ": " + conn.status().message());
      }
      continue;
    }
    if (on_spare) ++accepted_on_spare_;
    spare_failed_ = false;
    {
      std::lock_guard lock(mutex_);
      accepted_.push_back(std::move(*conn));
    }
    changed_.notify_all();
  }
  // Once the requests in hand are answered: the next client finds its worker made.
  MakeSpare();
}

void UcxListener::MakeSpare() {
  if (spare_ != nullptr || spare_failed_ || listener_ == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    if (!listening_) return;
  }
  std::string devices = DeviceSignature();
  Result<std::unique_ptr<Worker>> made = Worker::Make(context_);
  if (!made.ok()) {
    spare_failed_ = true;  // not again before the next accept: the listener's wake-ups are its own
    return;
  }
  spare_ = std::move(*made);
  spare_devices_ = std::move(devices);
  {
    std::lock_guard lock(mutex_);
    spare_ready_ = true;
  }
  changed_.notify_all();
}

bool UcxListener::AwaitSpare(std::chrono::milliseconds limit) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, limit, [&] { return spare_ready_ || closed_; }) && spare_ready_;
}

Result<std::unique_ptr<Connection>> UcxListener::Accept(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const bool ready = limits_.clock->WaitFor(changed_, lock, timeout,
                                            [&] { return !accepted_.empty() || !listening_; });
  if (!listening_) return Status::Cancelled("the UCX listener is closed");
  if (!ready) return Status::DeadlineExceeded("timed out waiting for a UCX connection");
  std::unique_ptr<Connection> conn = std::move(accepted_.front());
  accepted_.pop_front();
  return conn;
}

Result<std::shared_ptr<Region>> UcxListener::CreateRegion(int64_t size) {
  if (!limits_.remote_memory) {
    return Status::NotSupported("this listener lends no memory (remote_memory is off)");
  }
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<UcxRegion> region, UcxRegion::Allocate(context_, size));
  return std::shared_ptr<Region>(std::move(region));
}

Result<std::shared_ptr<Region>> UcxListener::RegisterRegion(LendableBytes memory) {
  if (!limits_.remote_memory) {
    return Status::NotSupported("this listener lends no memory (remote_memory is off)");
  }
  FERRY_ASSIGN_OR_RAISE(
      std::shared_ptr<UcxRegion> region,
      UcxRegion::Register(context_, memory.data, memory.size, std::move(memory.owner)));
  return std::shared_ptr<Region>(std::move(region));
}

void UcxListener::Close() {
  std::deque<std::unique_ptr<Connection>> unclaimed;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    listening_ = false;
    spare_ready_ = false;
    unclaimed.swap(accepted_);
  }
  changed_.notify_all();
  std::unique_ptr<Worker> spare;
  worker_->Run([this, &spare] {
    if (listener_ != nullptr) {
      for (ucp_conn_request_h r : requests_) ucp_listener_reject(listener_, r);
      requests_.clear();
      ucp_listener_destroy(listener_);
      listener_ = nullptr;
    }
    spare = std::move(spare_);
  });
  // Destroyed here, not in the task: a round's tasks run under ReplayGuard, which a worker's
  // destruction takes again.
  spare.reset();
  unclaimed.clear();  // connections nobody accepted close here
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
