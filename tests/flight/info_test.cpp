// flight/info: how ferry writes times (endpoint expirations, refresh-ticket's answer), against
// values computed by hand (and checked with Python's datetime), and each endpoint's expected
// share of a flight's bytes.
#include "ferry/flight/info.hpp"

#include <gtest/gtest.h>

namespace ferry::flight {
namespace {

std::chrono::system_clock::time_point At(int64_t seconds, int64_t millis = 0) {
  return std::chrono::system_clock::time_point(std::chrono::seconds(seconds) +
                                               std::chrono::milliseconds(millis));
}

TEST(FormatRfc3339, WritesUtcToTheSecond) {
  EXPECT_EQ(FormatRfc3339(At(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(At(1795650478)), "2026-11-25T23:47:58Z");
  EXPECT_EQ(FormatRfc3339(At(1709208000)), "2024-02-29T12:00:00Z");  // a leap day
  // Fractions of a second are dropped, not rounded.
  EXPECT_EQ(FormatRfc3339(At(1795650478, 999)), "2026-11-25T23:47:58Z");
}

TEST(FlightInfo, EachEndpointIsExpectedToCarryItsShareOfTheBytes) {
  FlightInfo info;
  EXPECT_EQ(info.EndpointShare(), -1);  // no endpoints, no size
  info.endpoints.resize(3);
  EXPECT_EQ(info.EndpointShare(), -1);  // the size is unknown
  info.total_bytes = 1000;
  EXPECT_EQ(info.EndpointShare(), 333);  // rounded down
  info.total_bytes = 0;
  EXPECT_EQ(info.EndpointShare(), 0);
  info.endpoints.clear();
  info.total_bytes = 1000;
  EXPECT_EQ(info.EndpointShare(), -1);
}

}  // namespace
}  // namespace ferry::flight
