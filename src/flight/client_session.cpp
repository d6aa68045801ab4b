// The client's side of Flight sessions (see client_session.hpp).
#include "flight/client_session.hpp"

#include <charconv>
#include <sstream>

#include "ferry/device/device.hpp"
#include "flight/sessions.hpp"

namespace ferry::flight::internal {

namespace {

// The session id a `set-cookie` header sets ("" for one that expires it), or nullopt when the
// header is about another cookie.
std::optional<std::string> SessionIdOf(std::string_view header) {
  const std::string prefix = std::string(kSessionCookie) + "=";
  if (header.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view rest = header.substr(prefix.size());
  const std::string_view value = rest.substr(0, rest.find(';'));
  if (rest.find("Max-Age=0") != std::string_view::npos) return std::string();
  return std::string(value);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ClientSession::Headers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id_.empty()) return {};
  return {{"cookie", std::string(kSessionCookie) + "=" + id_}};
}

void ClientSession::TakeSetCookie(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  for (auto [it, end] = metadata.equal_range("set-cookie"); it != end; ++it) {
    const std::optional<std::string> id =
        SessionIdOf(std::string_view(it->second.data(), it->second.size()));
    if (!id.has_value()) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    id_ = *id;
    if (id_.empty()) options_.clear();
  }
}

bool ClientSession::open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !id_.empty();
}

void ClientSession::set_options(SessionOptions options) {
  std::lock_guard<std::mutex> lock(mutex_);
  options_ = std::move(options);
}

SessionOptions ClientSession::options() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return options_;
}

Result<GetOptions> ClientSession::Apply(GetOptions options) const {
  const SessionOptions session = this->options();
  if (auto it = session.find("body_type"); it != session.end() && !options.buffer_lists) {
    options.buffer_lists = it->second == "1";
  }
  if (auto it = session.find("parallelism"); it != session.end() && options.parallel == 0) {
    int n = 0;
    const char* end = it->second.data() + it->second.size();
    if (std::from_chars(it->second.data(), end, n).ptr == end && n > 0) options.parallel = n;
  }
  if (auto it = session.find("target_device"); it != session.end() && options.device == nullptr) {
    Result<Device*> device = ParseDevice(it->second);
    if (!device.ok()) {
      return device.status().WithContext("the session's target_device \"" + it->second + "\"");
    }
    options.device = *device;
  }
  return options;
}

std::string OptionText(const ::arrow::flight::protocol::SessionOptionValue& value) {
  using V = ::arrow::flight::protocol::SessionOptionValue;
  switch (value.option_value_case()) {
    case V::kStringValue:
      return value.string_value();
    case V::kBoolValue:
      return value.bool_value() ? "true" : "false";
    case V::kInt64Value:
      return std::to_string(value.int64_value());
    case V::kDoubleValue: {
      std::ostringstream out;
      out << value.double_value();
      return out.str();
    }
    case V::kStringListValue: {
      std::string joined;
      for (const std::string& item : value.string_list_value().values()) {
        joined += (joined.empty() ? "" : ",") + item;
      }
      return joined;
    }
    case V::OPTION_VALUE_NOT_SET:
      break;
  }
  return {};
}

}  // namespace ferry::flight::internal
