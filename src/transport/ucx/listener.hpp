// Internal to the UCX transport: the listener.
#pragma once

#include <sys/socket.h>
#include <ucp/api/ucp.h>

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

/// A UCP listener on its own worker. Each connection request is accepted on a fresh worker of
/// the listener's context (ServerConnection), so that a connection's messages identify their
/// client. Regions are registered with the same context, so any connection's endpoint serves
/// gets from them. Thread-safe; owned by the server.
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

 private:
  UcxListener(std::shared_ptr<Context> context, TransportLimits limits)
      : context_(std::move(context)), limits_(WithClock(std::move(limits))) {}
  static void OnConnectionRequest(ucp_conn_request_h request, void* arg);
  void AcceptPending();

  std::shared_ptr<Context> context_;
  const TransportLimits limits_;  // its clock set: Accept waits on it, and so do connections
  std::unique_ptr<Worker> worker_;
  std::string address_;

  // Progress thread only.
  ucp_listener_h listener_ = nullptr;
  std::vector<ucp_conn_request_h> requests_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Connection>> accepted_;
  bool listening_ = false;
  bool closed_ = false;
};

}  // namespace ferry::transport::internal::ucx
