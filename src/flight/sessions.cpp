// Flight sessions: the options each client set, kept by the arrow_flight_session_id cookie.
#include "flight/sessions.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>

#include "ferry/core/hex.hpp"

namespace ferry::flight::internal {

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// An integer option given as an integer, an integral double or a decimal string.
std::optional<int64_t> AsInteger(const OptionValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return *i;
  if (const auto* d = std::get_if<double>(&value)) {
    if (std::isfinite(*d) && std::floor(*d) == *d && std::fabs(*d) < 1e15) {
      return static_cast<int64_t>(*d);
    }
    return std::nullopt;
  }
  if (const auto* s = std::get_if<std::string>(&value)) {
    const std::string t = Trim(*s);
    int64_t out = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    if (ec == std::errc() && end == t.data() + t.size() && !t.empty()) return out;
  }
  return std::nullopt;
}

// "cpu", or a device kind with an optional ":N": the client's device, which this host need not
// have, so only the spelling is checked.
bool DeviceSpelling(const std::string& name) {
  static const char* const kKinds[] = {"cpu",          "cuda",   "cuda_host",
                                       "cuda_managed", "opencl", "guarded"};
  const size_t colon = name.find(':');
  const std::string kind = name.substr(0, colon);
  if (std::find(std::begin(kKinds), std::end(kKinds), kind) == std::end(kKinds)) return false;
  if (colon == std::string::npos) return true;
  const std::string id = name.substr(colon + 1);
  return !id.empty() && id.size() <= 9 &&
         std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); });
}

Result<std::string> NewSessionId() {
  uint8_t bits[16];
  if (getrandom(bits, sizeof(bits), 0) != static_cast<ssize_t>(sizeof(bits))) {
    return Status::FromErrno(errno, "cannot draw random bits for a session id");
  }
  return HexEncode(std::string_view(reinterpret_cast<const char*>(bits), sizeof(bits)));
}

}  // namespace

std::variant<OptionValue, OptionError> NormaliseOption(const std::string& name,
                                                       const OptionValue& value) {
  if (name != "compression" && name != "body_type" && name != "parallelism" &&
      name != "target_device") {
    return OptionError::kInvalidName;
  }
  if (std::holds_alternative<std::monostate>(value)) return OptionValue{};
  if (name == "compression") {
    const auto* s = std::get_if<std::string>(&value);
    if (s == nullptr) return OptionError::kInvalidValue;
    Result<ipc::Compression> c = ipc::ParseCompression(Lower(Trim(*s)));
    if (!c.ok()) return OptionError::kInvalidValue;
    switch (*c) {
      case ipc::Compression::kLz4Frame:
        return OptionValue{std::string("lz4_frame")};
      case ipc::Compression::kZstd:
        return OptionValue{std::string("zstd")};
      case ipc::Compression::kNone:
        break;
    }
    return OptionValue{std::string("none")};
  }
  if (name == "target_device") {
    const auto* s = std::get_if<std::string>(&value);
    if (s == nullptr) return OptionError::kInvalidValue;
    std::string device = Lower(Trim(*s));
    if (device == "cpu:0") device = "cpu";
    if (!DeviceSpelling(device)) return OptionError::kInvalidValue;
    return OptionValue{device};
  }
  const std::optional<int64_t> n = AsInteger(value);
  if (!n) return OptionError::kInvalidValue;
  if (name == "body_type" && *n != 0 && *n != 1) return OptionError::kInvalidValue;
  if (name == "parallelism" && (*n < 1 || *n > 1024)) return OptionError::kInvalidValue;
  return OptionValue{*n};
}

std::string SessionTable::CookieOf(const grpc::CallbackServerContext* context) {
  const auto& md = context->client_metadata();
  const std::string prefix = std::string(kSessionCookie) + "=";
  std::string found;
  for (auto [it, end] = md.equal_range("cookie"); it != end; ++it) {
    std::string_view header(it->second.data(), it->second.size());
    // A cookie header holds "name=value" pairs separated by "; ".
    while (!header.empty()) {
      const size_t semi = header.find(';');
      const std::string pair = Trim(header.substr(0, semi));
      header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
      if (pair.rfind(prefix, 0) == 0) found = pair.substr(prefix.size());
    }
  }
  return found;
}

Result<std::map<std::string, OptionError>> SessionTable::Set(
    std::string* id, const std::map<std::string, OptionValue>& values) {
  std::map<std::string, OptionError> errors;
  std::map<std::string, OptionValue> accepted;
  for (const auto& [name, value] : values) {
    std::variant<OptionValue, OptionError> v = NormaliseOption(name, value);
    if (const auto* e = std::get_if<OptionError>(&v)) {
      errors[name] = *e;
    } else {
      accepted[name] = std::get<OptionValue>(std::move(v));
    }
  }
  std::lock_guard lock(mutex_);
  if (id->empty()) {
    if (sessions_.size() >= kMaxSessions) {
      return Status::ResourceExhausted("the server keeps at most " + std::to_string(kMaxSessions) +
                                       " sessions: close one (CloseSession) first");
    }
    FERRY_ASSIGN_OR_RAISE(*id, NewSessionId());
    sessions_[*id];
  }
  auto it = sessions_.find(*id);
  if (it == sessions_.end()) {
    return Status::NotFound("the " + std::string(kSessionCookie) +
                            " cookie names no open session (closed, or opened on another server)");
  }
  for (auto& [name, value] : accepted) {
    if (std::holds_alternative<std::monostate>(value)) {
      it->second.erase(name);
    } else {
      it->second[name] = std::move(value);
    }
  }
  return errors;
}

Result<SessionValues> SessionTable::Get(const std::string& id) const {
  if (id.empty()) return SessionValues{};
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return Status::NotFound("the " + std::string(kSessionCookie) +
                            " cookie names no open session (closed, or opened on another server)");
  }
  return it->second;
}

Status SessionTable::Close(const std::string& id) {
  if (id.empty()) {
    return Status::NotFound("no session to close: the call has no " + std::string(kSessionCookie) +
                            " cookie");
  }
  std::lock_guard lock(mutex_);
  if (sessions_.erase(id) == 0) {
    return Status::NotFound("the " + std::string(kSessionCookie) +
                            " cookie names no open session (closed, or opened on another server)");
  }
  return Status::OK();
}

ipc::Compression SessionTable::CompressionOf(const std::string& id) const {
  if (id.empty()) return ipc::Compression::kNone;
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return ipc::Compression::kNone;
  auto c = it->second.find("compression");
  if (c == it->second.end()) return ipc::Compression::kNone;
  Result<ipc::Compression> parsed = ipc::ParseCompression(std::get<std::string>(c->second));
  return parsed.ok() ? *parsed : ipc::Compression::kNone;
}

size_t SessionTable::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

Result<ipc::Compression> CallCompression(const SessionTable& sessions,
                                         const grpc::CallbackServerContext* context) {
  const auto& md = context->client_metadata();
  auto header = md.find(kCompressionHeader);
  if (header != md.end()) {
    const std::string name(header->second.data(), header->second.size());
    Result<ipc::Compression> c = ipc::ParseCompression(Lower(Trim(name)));
    if (!c.ok())
      return c.status().WithContext(std::string("the ") + kCompressionHeader + " header");
    return c;
  }
  const std::string id = SessionTable::CookieOf(context);
  if (!id.empty()) FERRY_RETURN_NOT_OK(sessions.Get(id).status());
  return sessions.CompressionOf(id);
}

}  // namespace ferry::flight::internal
