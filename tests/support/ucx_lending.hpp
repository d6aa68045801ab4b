// For tests of type-1 lending over UCX: where the loaded UCX would emulate a same-host client's
// gets, a ferry server sends that client packed bodies instead, and a test of lending must then
// reach the server by TCP.
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

/// While alive, where the loaded UCX does not lend on one host, this process's UCX clients go
/// by TCP alone (FERRY_UCX_FAST_PATH=0), so that the server lends to them. Made before the test
/// starts a thread and destroyed after its threads stopped (it sets the environment).
class UcxLendingPath {
 public:
  UcxLendingPath() : set_(!UcxLendsOnOneHost()) {
    if (set_) setenv("FERRY_UCX_FAST_PATH", "0", 1);
  }
  ~UcxLendingPath() {
    if (set_) unsetenv("FERRY_UCX_FAST_PATH");
  }
  UcxLendingPath(const UcxLendingPath&) = delete;
  UcxLendingPath& operator=(const UcxLendingPath&) = delete;

 private:
  bool set_;
};

}  // namespace ferry::testing
