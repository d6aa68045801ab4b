// UCX endpoints and the operations on them.
#if FERRY_WITH_UCX

#include "transport/ucx/endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "transport/ucx/context.hpp"
#include "transport/ucx/worker.hpp"

namespace ferry::transport::internal::ucx {

void Completion::Done(ucs_status_t status) {
  std::lock_guard lock(mutex_);
  if (status != UCS_OK && status_ == UCS_OK) status_ = status;
  if (--remaining_ <= 0) done_.notify_all();
}

void Completion::Abandon(ucs_status_t status) {
  std::lock_guard lock(mutex_);
  if (remaining_ <= 0) return;
  if (status_ == UCS_OK) status_ = status;
  remaining_ = 0;
  done_.notify_all();
}

namespace {

// The calling thread's timer slack: what the kernel may add to any timed sleep of it.
std::chrono::nanoseconds TimerSlack() {
  const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  return std::chrono::nanoseconds(slack > 0 ? slack : 0);
}

}  // namespace

bool Completion::Wait(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (remaining_ <= 0) return true;
  const auto now = std::chrono::steady_clock::now();
  if (deadline <= now) {
    // A look naps. The kernel sleeps a timed wait out to its deadline plus up to the slack, so
    // the wait asks for the rest of the nap: without that, the nap was the slack alone.
    deadline = now + std::max<std::chrono::nanoseconds>(kLookNap - TimerSlack(), {});
  }
  return done_.wait_until(lock, deadline, [&] { return remaining_ <= 0; });
}

bool Completion::Wait(const Clock& clock, Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return clock.WaitUntil(done_, lock, deadline, [&] { return remaining_ <= 0; });
}

ucs_status_t Completion::status() {
  std::lock_guard lock(mutex_);
  return status_;
}

namespace {

void OnDone(void* request, ucs_status_t status, void* user_data) {
  auto* pending = static_cast<Pending*>(user_data);
  if (pending->in_call) {
    pending->fired = true;
    pending->fired_status = status;
    return;
  }
  const bool released = pending->worker != nullptr && pending->worker->Untrack(request);
  pending->done->Done(status);
  delete pending;
  if (!released) ucp_request_free(request);
}

// An operation UCX may finish at once (NULL), fail at once, or finish later in OnDone (until
// then its worker tracks it).
void Settle(ucs_status_ptr_t request, Pending* pending) {
  pending->in_call = false;
  if (request != nullptr && !UCS_PTR_IS_ERR(request) && pending->fired) {
    pending->done->Done(pending->fired_status);
    delete pending;
    ucp_request_free(request);
    return;
  }
  if (request != nullptr && !UCS_PTR_IS_ERR(request)) {
    if (pending->worker != nullptr) {
      pending->worker->Track(request, [pending] {
        pending->done->Done(UCS_ERR_CANCELED);
        delete pending;
      });
    }
    return;
  }
  pending->done->Done(UCS_PTR_STATUS(request));
  delete pending;
}

ucp_request_param_t Params(Pending* pending) {
  pending->in_call = true;
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  params.cb.send = OnDone;
  params.user_data = pending;
  return params;
}

ucp_ep_params_t CheckedParams(EndpointErrorHandler on_error, void* arg) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = on_error;
  params.err_handler.arg = arg;
  return params;
}

// The I/O vector of a send, kept alive with what `pending` already keeps until the send is done.
std::shared_ptr<std::vector<ucp_dt_iov_t>> Keep(std::vector<ucp_dt_iov_t> pieces,
                                                Pending* pending) {
  auto iov = std::make_shared<std::vector<ucp_dt_iov_t>>(std::move(pieces));
  if (pending->keep) {
    pending->keep = std::make_shared<std::pair<std::shared_ptr<const void>, decltype(iov)>>(
        std::move(pending->keep), iov);
  } else {
    pending->keep = iov;
  }
  return iov;
}

// What a send hands UCX for `iov`: one contiguous buffer when there is at most one piece (UCX's
// fastest protocols, and no I/O vector of length zero, which UCX refuses), else the vector.
std::pair<const void*, size_t> Describe(const std::vector<ucp_dt_iov_t>& iov,
                                        ucp_request_param_t* params) {
  if (iov.size() <= 1) {
    if (iov.empty()) return {nullptr, 0};
    return {iov[0].buffer, iov[0].length};
  }
  params->op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  params->datatype = ucp_dt_make_iov();
  return {iov.data(), iov.size()};
}

Result<ucp_ep_h> Create(ucp_worker_h worker, const ucp_ep_params_t& params, StatusCode code,
                        const char* what) {
  ucp_ep_h ep = nullptr;
  const ucs_status_t st = ucp_ep_create(worker, &params, &ep);
  if (st != UCS_OK) return UcxError(code, what, st);
  return ep;
}

}  // namespace

Result<ucp_ep_h> ConnectToSocket(ucp_worker_h worker, const sockaddr* addr, socklen_t addrlen,
                                 EndpointErrorHandler on_error, void* arg) {
  ucp_ep_params_t params = CheckedParams(on_error, arg);
  params.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = addr;
  params.sockaddr.addrlen = addrlen;
  return Create(worker, params, StatusCode::kUnavailable,
                "cannot create an endpoint to the listener");
}

Result<ucp_ep_h> AcceptRequest(ucp_worker_h worker, ucp_conn_request_h request,
                               EndpointErrorHandler on_error, void* arg) {
  ucp_ep_params_t params = CheckedParams(on_error, arg);
  params.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
  params.conn_request = request;
  return Create(worker, params, StatusCode::kUnavailable, "cannot accept a UCX connection");
}

Result<ucp_ep_h> ConnectToWorker(ucp_worker_h worker, const std::string& address) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  return Create(worker, params, StatusCode::kUnavailable,
                "cannot create an endpoint to the peer's worker");
}

std::vector<std::string> LaneTransports(ucp_ep_h ep) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  if (out == nullptr) return {};
  ucp_ep_print_info(ep, out);
  std::fclose(out);
  // Lines such as "#   lane[1]:  2:tcp/eth0.0 md[1] -> md[1]/tcp/sysdev[255] rma_bw#0": the
  // transport is what stands between the resource index's colon and the slash.
  std::vector<std::string> transports;
  std::istringstream lines(std::string(text, size));
  std::free(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t lane = line.find("lane[");
    const size_t colon = lane == std::string::npos ? lane : line.find("]:", lane);
    if (colon == std::string::npos) continue;
    const size_t start = line.find(':', line.find_first_not_of(' ', colon + 2));
    const size_t slash = start == std::string::npos ? start : line.find('/', start);
    if (slash == std::string::npos || slash == start + 1) continue;
    transports.push_back(line.substr(start + 1, slash - start - 1));
  }
  return transports;
}

bool GetsEmulated(ucp_ep_h ep) {
  const std::vector<std::string> lanes = LaneTransports(ep);
  return std::any_of(lanes.begin(), lanes.end(), [](const std::string& t) { return t == "tcp"; }) &&
         std::all_of(lanes.begin(), lanes.end(),
                     [](const std::string& t) { return t == "tcp" || t == "self"; });
}

bool HasSharedMemoryLane(ucp_ep_h ep) {
  const std::vector<std::string> lanes = LaneTransports(ep);
  return std::any_of(lanes.begin(), lanes.end(), [](const std::string& t) {
    return t == "posix" || t == "sysv" || t == "xpmem";
  });
}

namespace {

// "host:port" ("[host]:port" for IPv6) of a socket address, or "" for another family.
std::string SockaddrText(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &in.sin_addr, host, sizeof(host));
    port = ntohs(in.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof(host));
    port = ntohs(in6.sin6_port);
  } else {
    return {};
  }
  // Appended piece by piece: GCC 12 misreports `"[" + std::string(...)` at -O3 (PR 105651).
  std::string out;
  const bool v6 = addr.ss_family == AF_INET6;
  if (v6) out.append("[");
  out.append(host);
  if (v6) out.append("]");
  out.append(":").append(std::to_string(port));
  return out;
}

}  // namespace

std::string RemoteAddress(ucp_ep_h ep) {
  ucp_ep_attr_t attr{};
  attr.field_mask = UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR;
  if (ucp_ep_query(ep, &attr) != UCS_OK) return {};
  return SockaddrText(attr.remote_sockaddr);
}

std::string RequestingAddress(ucp_conn_request_h request) {
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  if (ucp_conn_request_query(request, &attr) != UCS_OK) return {};
  return SockaddrText(attr.client_address);
}

void SendActiveMessage(ucp_ep_h ep, unsigned id, std::vector<ucp_dt_iov_t> pieces,
                       Pending* pending) {
  auto iov = Keep(std::move(pieces), pending);
  ucp_request_param_t params = Params(pending);
  const auto [buffer, count] = Describe(*iov, &params);
  params.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = 0;
  Settle(ucp_am_send_nbx(ep, id, nullptr, 0, buffer, count, &params), pending);
}

void SendTaggedMessage(ucp_ep_h ep, uint64_t tag, std::vector<ucp_dt_iov_t> pieces,
                       Pending* pending) {
  auto iov = Keep(std::move(pieces), pending);
  ucp_request_param_t params = Params(pending);
  const auto [buffer, count] = Describe(*iov, &params);
  Settle(ucp_tag_send_nbx(ep, buffer, count, tag, &params), pending);
}

void GetRemote(ucp_ep_h ep, ucp_rkey_h rkey, uint64_t address, void* into, size_t length,
               Pending* pending) {
  ucp_request_param_t params = Params(pending);
  Settle(ucp_get_nbx(ep, into, length, address, rkey, &params), pending);
}

void FlushEndpoint(ucp_ep_h ep, Pending* pending) {
  ucp_request_param_t params = Params(pending);
  Settle(ucp_ep_flush_nbx(ep, &params), pending);
}

void CloseEndpoint(Worker& worker, ucp_ep_h ep, bool force, Pending* pending) {
  if (pending == nullptr) pending = new Pending{std::make_shared<Completion>(), nullptr, &worker};
  ucp_request_param_t params = Params(pending);
  params.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  Settle(ucp_ep_close_nbx(ep, &params), pending);
}

Result<std::vector<ucp_dt_iov_t>> ToIov(std::span<const ByteSpan> pieces) {
  std::vector<ucp_dt_iov_t> iov;
  iov.reserve(pieces.size());
  for (const ByteSpan& p : pieces) {
    if (p.size < 0 || (p.size > 0 && p.data == nullptr)) {
      return Status::Invalid("a message piece is NULL or has a negative size");
    }
    if (p.size > 0) iov.push_back({const_cast<uint8_t*>(p.data), static_cast<size_t>(p.size)});
  }
  return iov;
}

}  // namespace ferry::transport::internal::ucx

#endif  // FERRY_WITH_UCX
