// Issued tickets: unguessable, expiring names for a dataset, which several servers may share
// (a Flight service and its shared-memory and UCX planes honour the same ticket).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/core/clock.hpp"
#include "ferry/core/result.hpp"
#include "ferry/core/trace.hpp"

namespace ferry::dipc {

/// A table of issued tickets: each is 128 random bits (32 hex digits) bound to a dataset's name
/// until it expires by the book's clock. Thread-safe; shared by the servers that honour the same
/// tickets (hold it in a shared_ptr). Expired tickets are dropped as new ones are issued, so it
/// holds only live ones.
class FERRY_EXPORT TicketBook {
 public:
  /// A book whose tickets expire by `clock` (NULL: Clock::Real()); the servers that share the
  /// book issue and refresh by it too (clock()).
  explicit TicketBook(std::shared_ptr<Clock> clock = nullptr);

  /// The clock tickets expire by.
  const std::shared_ptr<Clock>& clock() const { return clock_; }
  /// A fresh ticket for `name`, valid until `expires`, kept with `trace` (the trace of the call
  /// that issued it, whose span is the parent of the sessions that redeem it; empty: none).
  /// Errors only when the system has no random bits to give.
  Result<std::string> Issue(const std::string& name, Clock::time_point expires,
                            TraceContext trace = {});
  /// The trace a live ticket was issued with; empty (not valid()) for none, or for a ticket
  /// unknown or expired.
  TraceContext Trace(const std::string& ticket) const;
  /// Move a live ticket's expiry to `expires`. kNotFound if it is unknown or expired.
  Status Refresh(const std::string& ticket, Clock::time_point expires);
  /// The dataset a ticket names; kNotFound for a ticket never issued here or expired (the
  /// message says which and shows only the ticket's first characters: tickets are secrets).
  /// `issued`, when given, is set to whether the ticket was issued here, live or expired: a
  /// server without tokens takes a ticket never issued as a dataset's name.
  Result<std::string> Resolve(const std::string& ticket, bool* issued = nullptr) const;
  /// When a live ticket expires; kNotFound if it is unknown or expired.
  Result<Clock::time_point> Expiry(const std::string& ticket) const;
  /// Forget every ticket of `name` (its dataset was removed).
  void Revoke(const std::string& name);
  /// Forget one live ticket (Flight's CancelFlightInfo): it redeems nothing from now on.
  /// kNotFound if it is unknown or expired.
  Status Cancel(const std::string& ticket);
  /// Live tickets, for tests and stats.
  size_t size() const;
  /// Tickets issued since the book was made.
  int64_t issued() const;
  /// Tickets whose time ran out since the book was made (those revoked first are not counted),
  /// counted as soon as the clock passes their expiry. Walks the live tickets: for metrics.
  int64_t expired() const;

 private:
  struct Entry {
    std::string name;
    Clock::time_point expires;
    TraceContext trace;
  };
  const std::shared_ptr<Clock> clock_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> tickets_;
  int64_t issued_ = 0;  // under mutex_
  int64_t swept_ = 0;   // expired tickets dropped by Issue, under mutex_
};

}  // namespace ferry::dipc
