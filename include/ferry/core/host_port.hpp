// HOST:PORT addresses, the one parser every face uses (the UCX transport, the Flight server and
// client, the command line): IPv6 hosts are written in brackets, "[::1]:8815".
#pragma once

#include <string>
#include <string_view>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

namespace ferry {

/// A "HOST:PORT" address split into its parts. A value type that owns two short strings.
struct HostPort {
  /// The host without brackets ("::1", "127.0.0.1", "example.org"); empty when the address
  /// named none (":8815").
  std::string host;
  /// The port's decimal digits, 0 to 65535.
  std::string port;

  /// The host as an address writes it: in brackets when it holds a ':' (an IPv6 address).
  [[nodiscard]] FERRY_EXPORT std::string HostInAddress() const;
  /// "HOST:PORT" again, with the host as HostInAddress writes it.
  [[nodiscard]] FERRY_EXPORT std::string ToString() const;
};

/// Splits `text`, "HOST:PORT" or "[IPV6]:PORT". Refuses, naming the address and what is wrong,
/// a missing port, a port that is not a number from 0 to 65535, an unclosed bracket, and an IPv6
/// address without brackets (its last ':' could be the port's). Resolves nothing.
[[nodiscard]] FERRY_EXPORT Result<HostPort> ParseHostPort(std::string_view text);

}  // namespace ferry
