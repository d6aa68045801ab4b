// Whether a socket address is this machine's, the one answer the UCX transport (which plane a
// connection may take) and the Flight client (which endpoints are on this host) share.
#pragma once

#include <sys/socket.h>

#include "ferry/abi/export.h"

namespace ferry {

/// Whether `addr` is a loopback address (127.0.0.0/8 or ::1). Other families are not. Makes no
/// system call.
[[nodiscard]] FERRY_EXPORT bool IsLoopbackAddress(const sockaddr* addr);

/// Whether `addr` (IPv4 or IPv6; other families are not) reaches this machine: a loopback or
/// unspecified address (0.0.0.0, ::), or an address of one of its interfaces. Each call walks
/// the interfaces (getifaddrs), a few microseconds.
[[nodiscard]] FERRY_EXPORT bool IsThisHostsAddress(const sockaddr* addr);

}  // namespace ferry
