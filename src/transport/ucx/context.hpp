// Internal to the UCX transport: the UCP context every worker of a listener (or of one client
// connection) shares, and how UCX's statuses become ferry's errors.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>

#include "ferry/core/result.hpp"

namespace ferry::transport::internal::ucx {

/// Whether the libucp this process runs is release `major`.`minor` or later (asks libucp on
/// every call; callers keep the answer).
bool LoadedUcxAtLeast(unsigned major, unsigned minor);

/// Whether the UCX this process runs reads another process's registered host memory on this
/// host one-sided (CMA, with protocols v2: UCX 1.16 and later). Before 1.16 a get is emulated:
/// the memory's owner copies the bytes into the reader's shared-memory queue.
bool OneSidedGetsOnOneHost();

/// The network devices (UCX's NET_DEVICES: names joined by commas; "" when none is found) of a
/// context that talks only within this host, a loopback listener's or a client's of a loopback
/// address: the loopback interface and the physical ones (UCX may spread a TCP stream over
/// several), but no virtual one (a bridge, a veth, a VPN's tunnel). A worker opens every device
/// its context found, so one that went away since would fail it. Reads getifaddrs and sysfs.
std::string OnHostDevices();

/// A Status with `code` whose message is `what` and UCX's word for `status`.
Status UcxError(StatusCode code, const std::string& what, ucs_status_t status);

/// A UCP context with the features the protocol maps onto: tag matching (bodies, want_data,
/// free_data), Active Messages (metadata), RMA (type-1 gets) and wakeup (event-driven progress).
/// Workers on several threads share it. Unless the user set them, UCX's log level is "fatal"
/// (ferry reports failures itself), and messages up to 256 KiB go eager. Shared by a listener,
/// its connections and its regions; costs UCX's transport discovery (milliseconds) once.
class Context {
 public:
  /// With `rma` false the context has no remote memory access: no peer can read or write this
  /// process's memory through it (UCX's RMA emulation over TCP checks no address). A non-empty
  /// `net_devices` is UCX's NET_DEVICES (network devices only: shared memory stays), unless the
  /// user set UCX_NET_DEVICES. With `shared_memory` false, its workers open no shared-memory
  /// transport (UCX's TLS "^shm": for a peer on another host), unless the user set UCX_TLS.
  static Result<std::shared_ptr<Context>> Make(bool rma = true, const std::string& net_devices = {},
                                               bool shared_memory = true);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ucp_context_h handle() const noexcept { return context_; }

 private:
  Context() = default;
  ucp_context_h context_ = nullptr;
};

}  // namespace ferry::transport::internal::ucx
