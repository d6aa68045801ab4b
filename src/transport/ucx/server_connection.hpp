// Internal to the UCX transport: the server's end of a connection.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "transport/ucx/connection.hpp"

namespace ferry::transport::internal::ucx {

/// A server's end: its own worker on the listener's context, with the endpoint accepted from a
/// client's connection request. It takes every tagged message as it comes (clients send only
/// small ones: want_data, free_data, a hello) up to the tagged limit, answers a hello, and
/// refuses metadata from the client. Owned by whoever accepted it.
class ServerConnection final : public UcxConnection {
 public:
  /// Accept `request` on `worker`, a worker of `context` made for it ahead and never started, or
  /// on a fresh one when it is NULL. `*taken` says whether UCX took the request (its endpoint was
  /// attempted); when it did not, the caller still owns it and must reject it.
  static Result<std::unique_ptr<ServerConnection>> Accept(std::shared_ptr<Context> context,
                                                          ucp_conn_request_h request,
                                                          TransportLimits limits, bool* taken,
                                                          std::unique_ptr<Worker> worker = nullptr);
  ~ServerConnection() override;
  /// True for a ferry client whose gets UCX would emulate (on this host before UCX 1.16, over
  /// TCP lanes in any UCX), unless it said it reads only some buffers of each body.
  bool prefers_packed_bodies() const override { return packed_preferred_.load(); }
  /// True for a ferry client that said it may send another request after a stream ends.
  bool reusable() const override { return reusable_.load(); }
  std::string trace() const override {
    std::lock_guard lock(trace_mutex_);
    return trace_;
  }

 private:
  ServerConnection(std::unique_ptr<Worker> worker, TransportLimits limits)
      : UcxConnection(std::move(worker), limits, false) {}
  void Poll() override;
  void Answer(const SharedBytes& hello);
  /// Send the hello's answer once the fast endpoint is wired up (progress thread).
  void SendAnswer();

  std::atomic<bool> packed_preferred_{false};  // set before the hello's answer goes
  std::atomic<bool> reusable_{false};          // set before the hello's answer goes
  mutable std::mutex trace_mutex_;
  std::string trace_;  // the hello's trace, set before the hello's answer goes
  // Progress thread only.
  std::shared_ptr<std::string> answer_;       // the answer waiting to go
  std::shared_ptr<Completion> answer_ready_;  // the fast endpoint's wire-up
};

}  // namespace ferry::transport::internal::ucx
