// IsLoopbackAddress and IsThisHostsAddress against hand-written addresses and against the
// addresses iproute2's `ip -o addr show` lists for this host's interfaces.
#include "ferry/core/host_address.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace ferry {
namespace {

// `text` as a socket address of its family (IPv4 or IPv6).
sockaddr_storage Address(const std::string& text) {
  sockaddr_storage out{};
  auto* in = reinterpret_cast<sockaddr_in*>(&out);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (inet_pton(AF_INET, text.c_str(), &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
  } else if (inet_pton(AF_INET6, text.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
  } else {
    ADD_FAILURE() << "not an address: " << text;
  }
  return out;
}

bool Loopback(const std::string& text) {
  const sockaddr_storage a = Address(text);
  return IsLoopbackAddress(reinterpret_cast<const sockaddr*>(&a));
}

bool ThisHosts(const std::string& text) {
  const sockaddr_storage a = Address(text);
  return IsThisHostsAddress(reinterpret_cast<const sockaddr*>(&a));
}

// Every address `ip -o addr show` lists ("... inet 10.0.0.2/24 ..." and "inet6 fe80::1/64").
std::vector<std::string> IproutesAddresses() {
  std::vector<std::string> out;
  FILE* p = popen("ip -o addr show 2>/dev/null", "r");
  if (p == nullptr) return out;
  char line[1024];
  while (fgets(line, sizeof(line), p) != nullptr) {
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      if (word != "inet" && word != "inet6") continue;
      std::string address;
      if (words >> address) out.push_back(address.substr(0, address.find('/')));
    }
  }
  pclose(p);
  return out;
}

TEST(HostAddress, LoopbackIsTheWholeOf127AndIpv6sOne) {
  EXPECT_TRUE(Loopback("127.0.0.1"));
  EXPECT_TRUE(Loopback("127.255.1.2"));
  EXPECT_TRUE(Loopback("::1"));
  EXPECT_FALSE(Loopback("128.0.0.1"));
  EXPECT_FALSE(Loopback("0.0.0.0"));
  EXPECT_FALSE(Loopback("::"));
  EXPECT_FALSE(Loopback("::ffff:127.0.0.1"));  // v4-mapped: not IPv6's loopback
  sockaddr_un unix_address{};
  unix_address.sun_family = AF_UNIX;
  EXPECT_FALSE(IsLoopbackAddress(reinterpret_cast<const sockaddr*>(&unix_address)));
}

TEST(HostAddress, ThisHostIsLoopbackUnspecifiedAndEveryInterfacesAddress) {
  EXPECT_TRUE(ThisHosts("127.0.0.1"));
  EXPECT_TRUE(ThisHosts("127.0.0.53"));
  EXPECT_TRUE(ThisHosts("::1"));
  EXPECT_TRUE(ThisHosts("0.0.0.0"));
  EXPECT_TRUE(ThisHosts("::"));
  EXPECT_FALSE(ThisHosts("198.51.100.7"));  // TEST-NET-2 (RFC 5737): for documentation
  EXPECT_FALSE(ThisHosts("2001:db8::1"));   // documentation prefix (RFC 3849)
  const std::vector<std::string> listed = IproutesAddresses();
  ASSERT_FALSE(listed.empty()) << "`ip -o addr show` listed no address (is iproute2 installed?)";
  for (const std::string& a : listed) EXPECT_TRUE(ThisHosts(a)) << a;
  sockaddr_un unix_address{};
  unix_address.sun_family = AF_UNIX;
  EXPECT_FALSE(IsThisHostsAddress(reinterpret_cast<const sockaddr*>(&unix_address)));
}

}  // namespace
}  // namespace ferry
