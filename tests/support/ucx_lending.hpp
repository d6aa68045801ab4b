// For tests of the server's choice of body over UCX: where the loaded UCX would emulate a ferry
// client's gets (over TCP lanes; on one host before 1.16), the server sends it packed bodies
// unless the client asks for buffer lists (ClientOptions::buffer_lists).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ferry/transport/ucx.hpp"

namespace ferry::testing {

/// Whether the loaded UCX reads another process's memory on this host one-sided (1.16 and
/// later), so that a ferry server lends to same-host clients.
inline bool UcxLendsOnOneHost() {
  unsigned major = 0;
  unsigned minor = 0;
  const transport::UcxLibrary ucx = transport::LoadedUcx();
  if (!ucx.available || std::sscanf(ucx.loaded.c_str(), "%u.%u", &major, &minor) != 2) {
    return false;
  }
  return major > 1 || (major == 1 && minor >= 16);
}

/// Whether a UCX client on this host takes the same-host path (shared memory and CMA beside
/// the socket): unless FERRY_UCX_FAST_PATH=0, or UCX_TLS names no shared-memory transport (as
/// CI's TCP-only stage sets it). Mirrors the transport's rule, read from the environment.
inline bool UcxSameHostPath() {
  const char* fast = std::getenv("FERRY_UCX_FAST_PATH");
  if (fast != nullptr && std::string(fast) == "0") return false;
  const char* tls = std::getenv("UCX_TLS");
  if (tls == nullptr) return true;
  const std::string t = tls;
  for (const char* name : {"all", "sm", "shm", "posix", "sysv", "cma", "knem", "xpmem"}) {
    if (t.find(name) != std::string::npos) return true;
  }
  return false;
}

}  // namespace ferry::testing
