// Issued tickets, shared by the servers that honour them.
#include "ferry/dipc/tickets.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>

#include "ferry/core/hex.hpp"

namespace ferry::dipc {

namespace {

// Tickets are secrets: errors show only their first characters.
std::string Shown(const std::string& ticket) {
  return ticket.substr(0, 6) + (ticket.size() > 6 ? "..." : "");
}

}  // namespace

TicketBook::TicketBook(std::shared_ptr<Clock> clock)
    : clock_(clock ? std::move(clock) : Clock::Real()) {}

Result<std::string> TicketBook::Issue(const std::string& name, Clock::time_point expires,
                                      TraceContext trace) {
  uint8_t bits[16];
  if (getrandom(bits, sizeof(bits), 0) != static_cast<ssize_t>(sizeof(bits))) {
    return Status::FromErrno(errno, "cannot draw random bits for a ticket");
  }
  std::string ticket =
      HexEncode(std::string_view(reinterpret_cast<const char*>(bits), sizeof(bits)));
  std::lock_guard lock(mutex_);
  const Clock::time_point now = clock_->Now();
  for (auto it = tickets_.begin(); it != tickets_.end();) {
    if (it->second.expires <= now) {
      ++swept_;
      it = tickets_.erase(it);
    } else {
      it = std::next(it);
    }
  }
  tickets_[ticket] = Entry{name, expires, std::move(trace)};
  ++issued_;
  return ticket;
}

Status TicketBook::Refresh(const std::string& ticket, Clock::time_point expires) {
  std::lock_guard lock(mutex_);
  auto t = tickets_.find(ticket);
  if (t == tickets_.end() || clock_->Now() >= t->second.expires) {
    return Status::NotFound("unknown or expired ticket " + Shown(ticket));
  }
  t->second.expires = expires;
  return Status::OK();
}

Result<std::string> TicketBook::Resolve(const std::string& ticket, bool* issued) const {
  std::lock_guard lock(mutex_);
  auto t = tickets_.find(ticket);
  if (issued != nullptr) *issued = t != tickets_.end();
  if (t == tickets_.end()) return Status::NotFound("unknown ticket " + Shown(ticket));
  // Kept until Issue sweeps it, so every server sharing the book says "expired" alike.
  if (clock_->Now() >= t->second.expires)
    return Status::NotFound("expired ticket " + Shown(ticket));
  return t->second.name;
}

Result<Clock::time_point> TicketBook::Expiry(const std::string& ticket) const {
  std::lock_guard lock(mutex_);
  auto t = tickets_.find(ticket);
  if (t == tickets_.end() || clock_->Now() >= t->second.expires) {
    return Status::NotFound("unknown or expired ticket " + Shown(ticket));
  }
  return t->second.expires;
}

TraceContext TicketBook::Trace(const std::string& ticket) const {
  std::lock_guard lock(mutex_);
  auto t = tickets_.find(ticket);
  if (t == tickets_.end() || clock_->Now() >= t->second.expires) return {};
  return t->second.trace;
}

Status TicketBook::Cancel(const std::string& ticket) {
  std::lock_guard lock(mutex_);
  auto it = tickets_.find(ticket);
  if (it == tickets_.end() || it->second.expires <= clock_->Now()) {
    return Status::NotFound("no live ticket " + Shown(ticket) + " to cancel");
  }
  tickets_.erase(it);
  return Status::OK();
}

void TicketBook::Revoke(const std::string& name) {
  std::lock_guard lock(mutex_);
  const Clock::time_point now = clock_->Now();
  for (auto it = tickets_.begin(); it != tickets_.end();) {
    if (it->second.name != name) {
      it = std::next(it);
      continue;
    }
    if (it->second.expires <= now) ++swept_;  // it had expired before it was revoked
    it = tickets_.erase(it);
  }
}

size_t TicketBook::size() const {
  std::lock_guard lock(mutex_);
  return tickets_.size();
}

int64_t TicketBook::issued() const {
  std::lock_guard lock(mutex_);
  return issued_;
}

int64_t TicketBook::expired() const {
  std::lock_guard lock(mutex_);
  const Clock::time_point now = clock_->Now();
  int64_t n = swept_;
  for (const auto& [ticket, entry] : tickets_) n += entry.expires <= now ? 1 : 0;
  return n;
}

}  // namespace ferry::dipc
