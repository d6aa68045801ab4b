// Internal to the flight layer: the DoGet streams in progress, by the ticket each redeemed, so that
// CancelFlightInfo can end them (and so release the flight's memory they lend to gRPC).
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace ferry::flight::internal {

/// Thread-safe; owned by the server's state. A stream registers itself once its ticket is
/// redeemed and leaves in its OnDone, before its context goes: Cancel never touches a context
/// that is gone.
class ActiveReads {
 public:
  /// Register a stream of `ticket` on `context`: the id to Remove it by.
  uint64_t Add(const std::string& ticket, grpc::CallbackServerContext* context) {
    std::lock_guard lock(mutex_);
    reads_.emplace(++next_, std::make_pair(ticket, context));
    return next_;
  }
  void Remove(uint64_t id) {
    std::lock_guard lock(mutex_);
    reads_.erase(id);
  }
  /// Cancel every stream of `ticket` (gRPC's TryCancel: the client sees CANCELLED, the stream's
  /// pending write fails and it ends): how many there were.
  int Cancel(const std::string& ticket) {
    std::lock_guard lock(mutex_);
    int n = 0;
    for (auto& [id, read] : reads_) {
      if (read.first != ticket) continue;
      read.second->TryCancel();
      ++n;
    }
    cancelled_ += n;
    return n;
  }
  /// Streams cancelled so far.
  int64_t cancelled() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, std::pair<std::string, grpc::CallbackServerContext*>> reads_;
  uint64_t next_ = 0;
  int64_t cancelled_ = 0;
};

}  // namespace ferry::flight::internal
