// Dissociated IPC URIs: `scheme://authority/path?want_data=N&free_data=N&remote_handle=BASE64`.
// The scheme names the transport (shm, ucx, inproc, ...). `ferry=1` is ferry's own parameter
// (other implementations ignore it): the server speaks ferry's extensions, so a ferry client may
// ask for them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"

namespace ferry::dipc {

/// ferry's URI parameter that says the remote_handle is a CUDA IPC memory handle (its 64 bytes)
/// rather than a transport's key: type-1 addresses are then offsets from the base of that device
/// allocation, whose size in bytes is the parameter's value. Kept in Uri::other.
inline constexpr const char* kCudaIpcParameter = "ferry_cuda_ipc";

/// A parsed URI. `remote_handle` holds the decoded bytes (a UCX rkey, a CUDA IPC handle, ...).
/// Unknown query parameters are kept, in order, so printing round-trips.
struct FERRY_EXPORT Uri {
  std::string scheme;
  std::string authority;  // host[:port], or empty
  std::string path;       // from the first '/' after the authority, or empty
  uint64_t want_data = 0;
  std::optional<uint64_t> free_data;
  std::optional<std::string> remote_handle;
  /// The server speaks ferry's extensions (error texts, a same-host fast path); printed as
  /// ferry=1. A client uses them only when this is set.
  bool ferry = false;
  std::vector<std::pair<std::string, std::string>> other;

  /// Parse; errors name the part at fault (a missing scheme, a missing or non-numeric
  /// want_data, a duplicate parameter, bad base64 or percent-encoding).
  static Result<Uri> Parse(std::string_view text);
  /// Print; `Parse(ToString())` gives back an equal Uri.
  std::string ToString() const;
  bool operator==(const Uri&) const = default;
};

/// Standard base64 (RFC 4648, with padding).
FERRY_EXPORT std::string Base64Encode(std::string_view bytes);
/// Decode base64, standard or URL-safe, with or without padding; errors give the offending
/// position.
FERRY_EXPORT Result<std::string> Base64Decode(std::string_view text);

}  // namespace ferry::dipc
