// ParseHostPort: the one HOST:PORT parser, against hand-written addresses.
#include "ferry/core/host_port.hpp"

#include <gtest/gtest.h>

namespace ferry {
namespace {

HostPort Parsed(const char* text) {
  Result<HostPort> r = ParseHostPort(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? *r : HostPort{};
}

TEST(HostPort, SplitsNamesIpv4AndBracketedIpv6) {
  HostPort a = Parsed("example.org:8815");
  EXPECT_EQ(a.host, "example.org");
  EXPECT_EQ(a.port, "8815");
  HostPort b = Parsed("127.0.0.1:0");
  EXPECT_EQ(b.host, "127.0.0.1");
  EXPECT_EQ(b.port, "0");
  HostPort c = Parsed("[::1]:65535");
  EXPECT_EQ(c.host, "::1");
  EXPECT_EQ(c.port, "65535");
  HostPort d = Parsed("[fe80::1%eth0]:7");
  EXPECT_EQ(d.host, "fe80::1%eth0");
  HostPort e = Parsed(":8815");
  EXPECT_EQ(e.host, "");
  EXPECT_EQ(e.port, "8815");
}

TEST(HostPort, WritesIpv6HostsBackInBrackets) {
  EXPECT_EQ(Parsed("[::1]:80").HostInAddress(), "[::1]");
  EXPECT_EQ(Parsed("[::1]:80").ToString(), "[::1]:80");
  EXPECT_EQ(Parsed("10.1.2.3:80").HostInAddress(), "10.1.2.3");
  EXPECT_EQ(Parsed("h:1").ToString(), "h:1");
}

TEST(HostPort, RefusesWhatIsNotHostPortAndSaysWhy) {
  const struct {
    const char* text;
    const char* why;
  } cases[] = {
      {"", "no ':' and port"},
      {"example.org", "no ':' and port"},
      {"example.org:", "the port must be 0 to 65535"},
      {"example.org:65536", "the port must be 0 to 65535"},
      {"example.org:123456", "the port must be 0 to 65535"},
      {"example.org:-1", "the port must be 0 to 65535"},
      {"example.org:8o", "the port must be 0 to 65535"},
      {"::1:80", "an IPv6 host must be written in brackets"},
      {"[::1:80", "the '[' of an IPv6 host is not closed"},
      {"[::1]80", "no ':' and port after the bracketed host"},
      {"[::1]", "no ':' and port after the bracketed host"},
  };
  for (const auto& c : cases) {
    Result<HostPort> r = ParseHostPort(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    const std::string& message = r.status().message();
    EXPECT_NE(message.find(std::string("\"") + c.text + "\""), std::string::npos) << message;
    EXPECT_NE(message.find(c.why), std::string::npos) << c.text << ": " << message;
  }
}

}  // namespace
}  // namespace ferry
