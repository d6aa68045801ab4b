// A session's requests after its first, on a connection the client keeps between streams
// (Connection::reusable), and its count among the server's active clients.
#include "dipc/fault.hpp"
#include "dipc/session.hpp"

namespace ferry::dipc::internal {

void Session::SetActive(bool active) {
  if (active == active_) return;
  active_ = active;
  {
    std::lock_guard lock(state_->idle_mutex);
    if (active) {
      ++state_->clients_active;
    } else {
      --state_->clients_active;
    }
  }
  if (!active) state_->idle_changed.notify_all();
}

Session::After Session::AwaitNextRequest(transport::TaggedMessage* next) {
  // Only the one-connection shape with nothing lent: a loan outlives its stream, and a client
  // holding one ends the session as the protocol says (free_data, then its close).
  if (!conn_->reusable() || !send_metadata_ || !send_bodies_) return After::kNotReusable;
  std::unique_lock lock(mutex_);
  if (block_addresses_ + static_cast<int64_t>(lent_.distinct()) > 0) return After::kNotReusable;
  lock.unlock();
  // Still a client being served until it says it has read the stream: a drain waits for it.
  phase_ = "free";
  // The fault suite's pause at the end of a stream, as AwaitEnd's: a client that has read
  // everything and said so, or closed, ends it.
  FaultPoint("server", "free", [this] {
    std::lock_guard hold(mutex_);
    return client_closed_ || stream_done_ || next_want_.has_value() || dead_.load();
  });
  lock.lock();
  const bool said = state_->options.clock->WaitFor(changed_, lock, state_->options.timeout, [&] {
    return stream_done_ || next_want_.has_value() || client_closed_ || dead_.load();
  });
  if (!said) {
    unresponsive_ = true;  // neither read to its end nor closed: as AwaitEnd's unresponsive client
    return After::kClosed;
  }
  if (!stream_done_ && !next_want_) return After::kClosed;
  stream_done_ = false;
  lock.unlock();
  LogEnd();
  phase_ = "waiting for a request";
  entry_ = Catalogue::Entry{};  // a kept connection holds no dataset
  SetActive(false);             // a drain need not wait for a client between its streams
  lock.lock();
  state_->options.clock->WaitFor(changed_, lock, state_->options.timeout, [&] {
    return next_want_.has_value() || client_closed_ || dead_.load();
  });
  if (next_want_ && !dead_.load()) {
    *next = std::move(*next_want_);
    next_want_.reset();
    lock.unlock();
    SetActive(true);
    end_logged_ = false;
    return After::kNext;
  }
  return client_closed_ || dead_.load() ? After::kClosed : After::kIdle;
}

void Session::LogEnd() {
  end_logged_ = true;
  const std::string who = conn_ && !conn_->peer().empty() ? conn_->peer() : "a client";
  std::string served = "client " + who + ": served " + std::to_string(next_seq_) + " messages";
  if (requests_ > 1) served += " (request " + std::to_string(requests_) + " on this connection)";
  state_->Log(Record(LogLevel::kInfo, "session_end", std::move(served)));
}

}  // namespace ferry::dipc::internal
