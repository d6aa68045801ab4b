// Internal to the UCX transport: the listener.
#pragma once

#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/transport/transport.hpp"
#include "transport/mailbox.hpp"
#include "transport/ucx/context.hpp"
#include "transport/ucx/worker.hpp"

namespace ferry::transport::internal::ucx {

class ServerConnection;

/// A UCP listener on its own worker. Each connection request is accepted on a worker of its own
/// (ServerConnection), so that a connection's messages identify their client. That worker is made
/// ahead, on the listener's thread once it is idle: making one (with shared-memory transports, the
/// mapping of their segments) is 4-5 ms of the server's accept otherwise. The one waiting costs
/// its descriptors and segments, no thread, and is used only while the host's network interfaces
/// are what they were when it was made. Regions are registered with the same context, so any
/// connection's endpoint serves gets from them. Thread-safe; owned by the server.
class UcxListener final : public Listener {
 public:
  /// Listen on `addr`; `host` names it in address().
  static Result<std::unique_ptr<UcxListener>> Make(const sockaddr* addr, socklen_t addrlen,
                                                   const std::string& host, TransportLimits limits);
  ~UcxListener() override;

  Result<std::unique_ptr<Connection>> Accept(std::chrono::milliseconds timeout) override;
  std::string scheme() const override { return "ucx"; }
  std::string address() const override { return address_; }
  Result<std::shared_ptr<Region>> CreateRegion(int64_t size) override;
  Result<std::shared_ptr<Region>> RegisterRegion(LendableBytes memory) override;
  void Close() override;

  /// For tests: wait, at most `limit`, until a worker for the next connection is ready. True if
  /// it is.
  bool AwaitSpare(std::chrono::milliseconds limit);
  /// For tests: how many connections were accepted on a worker made before their request came.
  int64_t accepted_on_spare() const { return accepted_on_spare_.load(); }
  /// For tests: how many workers made ahead were dropped because the host's network interfaces
  /// changed after they were made (another process's veths, say); their clients got fresh ones.
  int64_t spares_dropped() const { return spares_dropped_.load(); }

 private:
  UcxListener(std::shared_ptr<Context> context, TransportLimits limits)
      : context_(std::move(context)), limits_(WithClock(std::move(limits))) {}
  static void OnConnectionRequest(ucp_conn_request_h request, void* arg);
  void AcceptPending();
  /// Make the next connection's worker, unless one waits already or the listener is closed
  /// (progress thread). A failure leaves none: the next connection makes its own (and reports
  /// why), and the listener tries again once it has accepted one.
  void MakeSpare();

  std::shared_ptr<Context> context_;
  const TransportLimits limits_;  // its clock set: Accept waits on it, and so do connections
  std::unique_ptr<Worker> worker_;
  std::string address_;

  // Progress thread only.
  ucp_listener_h listener_ = nullptr;
  std::vector<ucp_conn_request_h> requests_;
  std::unique_ptr<Worker> spare_;  // the next connection's worker, never started
  bool spare_failed_ = false;      // the last try to make it failed
  std::string spare_devices_;      // the network interfaces when it was made (DeviceSignature)
  std::atomic<int64_t> accepted_on_spare_{0};
  std::atomic<int64_t> spares_dropped_{0};

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Connection>> accepted_;
  bool listening_ = false;
  bool closed_ = false;
  bool spare_ready_ = false;  // spare_ is set (for AwaitSpare)
};

}  // namespace ferry::transport::internal::ucx
