// Internal to the flight layer: Flight sessions (the standard SetSessionOptions,
// GetSessionOptions and CloseSession actions). A session is a set of per-client defaults, kept by
// the server and named by the `arrow_flight_session_id` cookie, as the Flight specification says.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ferry/core/result.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::flight::internal {

/// The cookie a session is kept by.
inline constexpr const char* kSessionCookie = "arrow_flight_session_id";
/// The call header that asks DoGet for compressed bodies ("lz4_frame", "zstd" or "none"); it
/// wins over the session's `compression` option.
inline constexpr const char* kCompressionHeader = "ferry-compression";

/// One option's value, as SessionOptionValue carries it (monostate: no value, which removes it).
using OptionValue =
    std::variant<std::monostate, std::string, bool, int64_t, double, std::vector<std::string>>;

/// Why one option was not set (SetSessionOptionsResult's ErrorValue).
enum class OptionError : int8_t { kInvalidName = 1, kInvalidValue = 2 };

/// One client's options, normalised: compression by its Arrow name, body_type 0 or 1,
/// parallelism >= 1, target_device like "cpu" or "cuda:0". Absent: the server's default.
using SessionValues = std::map<std::string, OptionValue>;

/// Every open session. Thread-safe; owned by the server's state. Sessions live until
/// CloseSession or the server's end; at most kMaxSessions are open at once.
class SessionTable {
 public:
  static constexpr size_t kMaxSessions = 10000;

  /// The session id a call's `cookie` headers name ("" for none).
  static std::string CookieOf(const grpc::CallbackServerContext* context);
  /// Set `values` in session `id` ("": a new session, whose id is returned through `id`). Each
  /// option refused (an unknown name, a value of the wrong type or range) is in the returned
  /// map and changes nothing; the others are set. kNotFound for an id that is not open,
  /// kResourceExhausted when kMaxSessions are open.
  Result<std::map<std::string, OptionError>> Set(std::string* id,
                                                 const std::map<std::string, OptionValue>& values);
  /// The options of session `id` (empty for ""); kNotFound for an id that is not open.
  Result<SessionValues> Get(const std::string& id) const;
  /// Close session `id`; kNotFound if it is not open.
  Status Close(const std::string& id);
  /// The compression session `id` asks for (kNone for "" or an id not open).
  ipc::Compression CompressionOf(const std::string& id) const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, SessionValues> sessions_;
};

/// Check and normalise one option: the value to store (monostate: remove it), or why not.
/// Strings are taken for every option, as Flight SQL recommends ("2" for parallelism).
std::variant<OptionValue, OptionError> NormaliseOption(const std::string& name,
                                                       const OptionValue& value);

/// The compression DoGet writes for `context`: its ferry-compression header when present, else
/// its session's option, else none. kInvalid for a header that names no codec, kNotFound for a
/// cookie naming no open session.
Result<ipc::Compression> CallCompression(const SessionTable& sessions,
                                         const grpc::CallbackServerContext* context);

}  // namespace ferry::flight::internal
