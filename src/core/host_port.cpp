// ParseHostPort: HOST:PORT and [IPV6]:PORT, checked but not resolved.
#include "ferry/core/host_port.hpp"

namespace ferry {

namespace {

Status Refuse(std::string_view text, const char* why) {
  std::string message = "address \"";
  message.append(text);
  message += "\" is not HOST:PORT: ";
  message += why;
  return Status::Invalid(message);
}

}  // namespace

std::string HostPort::HostInAddress() const {
  if (host.find(':') == std::string::npos) return host;
  std::string out = "[";
  out += host;
  out += ']';
  return out;
}

std::string HostPort::ToString() const {
  std::string out = HostInAddress();
  out += ':';
  out += port;
  return out;
}

Result<HostPort> ParseHostPort(std::string_view text) {
  HostPort out;
  std::string_view rest;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos)
      return Refuse(text, "the '[' of an IPv6 host is not closed");
    out.host = std::string(text.substr(1, close - 1));
    rest = text.substr(close + 1);
    if (rest.empty() || rest.front() != ':') {
      return Refuse(text, "no ':' and port after the bracketed host");
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return Refuse(text, "no ':' and port");
    if (text.find(':') != colon) {
      return Refuse(text, "an IPv6 host must be written in brackets, e.g. [::1]:8815");
    }
    out.host = std::string(text.substr(0, colon));
    rest = text.substr(colon);
  }
  rest.remove_prefix(1);  // the ':'
  if (rest.empty() || rest.size() > 5) return Refuse(text, "the port must be 0 to 65535");
  long value = 0;
  for (const char c : rest) {
    if (c < '0' || c > '9') return Refuse(text, "the port must be 0 to 65535");
    value = value * 10 + (c - '0');
  }
  if (value > 65535) return Refuse(text, "the port must be 0 to 65535");
  out.port = std::string(rest);
  return out;
}

}  // namespace ferry
