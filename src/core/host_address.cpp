// IsLoopbackAddress and IsThisHostsAddress: an address compared with this machine's interfaces.
#include "ferry/core/host_address.hpp"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstring>

namespace ferry {

namespace {

bool SameAddress(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  }
  return a->sa_family == AF_INET6 &&
         std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                     &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
}

bool IsUnspecified(const sockaddr* addr) {
  if (addr->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr == INADDR_ANY;
  }
  return addr->sa_family == AF_INET6 &&
         IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr);
}

}  // namespace

bool IsLoopbackAddress(const sockaddr* addr) {
  if (addr->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr) >> 24) == 127;
  }
  return addr->sa_family == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr);
}

bool IsThisHostsAddress(const sockaddr* addr) {
  if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) return false;
  if (IsLoopbackAddress(addr) || IsUnspecified(addr)) return true;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    found = i->ifa_addr != nullptr && SameAddress(i->ifa_addr, addr);
  }
  freeifaddrs(list);
  return found;
}

}  // namespace ferry
