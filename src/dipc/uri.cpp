// Dissociated IPC URIs and base64.
#include "ferry/dipc/uri.hpp"

#include <cctype>
#include <charconv>

#include "ferry/core/hex.hpp"

namespace ferry::dipc {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  // Standard (RFC 4648 section 4) and URL-safe (section 5) alphabets alike.
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

Result<std::string> PercentDecode(std::string_view s, std::string_view what) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) {
      return Status::Invalid(std::string(what) + ": truncated percent-escape at position " +
                             std::to_string(i));
    }
    const int hi = HexDigitValue(s[i + 1]);
    const int lo = HexDigitValue(s[i + 2]);
    if (hi < 0 || lo < 0) {
      return Status::Invalid(std::string(what) + ": bad percent-escape at position " +
                             std::to_string(i));
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// Escape everything but unreserved characters (RFC 3986), so base64's + / = survive.
std::string PercentEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      AppendHexByte(c, HexCase::kUpper, &out);
    }
  }
  return out;
}

Result<uint64_t> ParseU64(std::string_view value, std::string_view name) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    return Status::Invalid("URI parameter " + std::string(name) + "=\"" + std::string(value) +
                           "\" is not an unsigned 64-bit integer");
  }
  return v;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16 |
                       static_cast<uint8_t>(bytes[i + 1]) << 8 | static_cast<uint8_t>(bytes[i + 2]);
    for (int k = 3; k >= 0; --k) out.push_back(kAlphabet[(v >> (6 * k)) & 63]);
  }
  const size_t left = bytes.size() - i;
  if (left > 0) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (left == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(left == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] != '='; ++i) {
    const int v = Base64Value(text[i]);
    if (v < 0) {
      return Status::Invalid("base64: unexpected '" + std::string(1, text[i]) + "' at position " +
                             std::to_string(i));
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  const size_t data_chars = i;
  for (; i < text.size(); ++i) {
    if (text[i] != '=') {
      return Status::Invalid("base64: data after padding at position " + std::to_string(i));
    }
  }
  if (data_chars % 4 == 1 || text.size() - data_chars > 2) {
    return Status::Invalid("base64: " + std::to_string(text.size()) + " characters cannot be " +
                           "a complete encoding");
  }
  return out;
}

Result<Uri> Uri::Parse(std::string_view text) {
  Uri uri;
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::Invalid("URI \"" + std::string(text) + "\" has no scheme (e.g. shm://, ucx://)");
  }
  uri.scheme = std::string(text.substr(0, colon));
  for (char c : uri.scheme) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.')) {
      return Status::Invalid("URI scheme \"" + uri.scheme + "\" has a bad character '" +
                             std::string(1, c) + "'");
    }
  }
  std::string_view rest = text.substr(colon + 1);
  const size_t q = rest.find('?');
  std::string_view query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1);
  std::string_view hier = rest.substr(0, q);
  if (hier.substr(0, 2) == "//") {
    hier.remove_prefix(2);
    const size_t slash = hier.find('/');
    uri.authority = std::string(hier.substr(0, slash));
    if (slash != std::string_view::npos) uri.path = std::string(hier.substr(slash));
  } else {
    uri.path = std::string(hier);
  }
  bool have_want = false;
  bool have_ferry = false;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    FERRY_ASSIGN_OR_RAISE(std::string key, PercentDecode(pair.substr(0, eq), "URI parameter name"));
    FERRY_ASSIGN_OR_RAISE(
        std::string value,
        PercentDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1),
                      "URI parameter " + key));
    auto duplicate = [&key]() {
      return Status::Invalid("URI parameter " + key + " is given twice");
    };
    if (key == "want_data") {
      if (have_want) return duplicate();
      FERRY_ASSIGN_OR_RAISE(uri.want_data, ParseU64(value, key));
      have_want = true;
    } else if (key == "free_data") {
      if (uri.free_data) return duplicate();
      FERRY_ASSIGN_OR_RAISE(uint64_t v, ParseU64(value, key));
      uri.free_data = v;
    } else if (key == "ferry") {
      if (have_ferry) return duplicate();
      if (value != "0" && value != "1") {
        return Status::Invalid("URI parameter ferry=\"" + value + "\" is neither 0 nor 1");
      }
      uri.ferry = value == "1";
      have_ferry = true;
    } else if (key == "remote_handle") {
      if (uri.remote_handle) return duplicate();
      Result<std::string> decoded = Base64Decode(value);
      if (!decoded.ok()) {
        return Status::Invalid("URI parameter remote_handle: " + decoded.status().message());
      }
      uri.remote_handle = std::move(*decoded);
    } else {
      uri.other.emplace_back(std::move(key), std::move(value));
    }
  }
  if (!have_want) {
    return Status::Invalid("URI \"" + std::string(text) +
                           "\" lacks the required want_data parameter");
  }
  return uri;
}

std::string Uri::ToString() const {
  std::string out = scheme + ":";
  if (!authority.empty() || path.empty() || path[0] == '/') out += "//" + authority;
  out += path;
  out += "?want_data=" + std::to_string(want_data);
  if (free_data) out += "&free_data=" + std::to_string(*free_data);
  if (remote_handle) out += "&remote_handle=" + PercentEncode(Base64Encode(*remote_handle));
  if (ferry) out += "&ferry=1";
  for (const auto& [k, v] : other) out += "&" + PercentEncode(k) + "=" + PercentEncode(v);
  return out;
}

}  // namespace ferry::dipc
