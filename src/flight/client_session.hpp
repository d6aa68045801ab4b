// Internal to the flight layer: the Flight session ferry's client holds on its server (the
// standard SetSessionOptions, GetSessionOptions and CloseSession actions, from the client's side).
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "Flight.pb.h"
#include "ferry/flight/client.hpp"

namespace ferry::flight::internal {

/// The session a client holds: the arrow_flight_session_id cookie its server set, and the
/// session's options as last read back. Shared by the client and its endpoint reader, which sends
/// the cookie on DoGet calls to the same server (another server would not know it). Thread-safe.
class ClientSession {
 public:
  /// The `cookie` header naming the session; none without one.
  std::vector<std::pair<std::string, std::string>> Headers() const;
  /// Take a server's answer: its `set-cookie` for the session keeps a new id, and one with
  /// `Max-Age=0` (CloseSession's) forgets it, with the options.
  void TakeSetCookie(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);
  bool open() const;
  void set_options(SessionOptions options);
  SessionOptions options() const;
  /// `options` with the session's body_type, parallelism and target_device where `options`
  /// leaves the default (buffer_lists false, parallel 0, no device). A target_device this
  /// process cannot resolve is an error that names it.
  Result<GetOptions> Apply(GetOptions options) const;

 private:
  mutable std::mutex mutex_;
  std::string id_;
  SessionOptions options_;
};

/// One SessionOptionValue as text: a string as it is, an integer in decimal, a bool as "true" or
/// "false", a double as printed, a list joined by ",".
std::string OptionText(const ::arrow::flight::protocol::SessionOptionValue& value);

}  // namespace ferry::flight::internal
