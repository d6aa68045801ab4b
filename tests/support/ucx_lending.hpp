// For tests of type-1 lending over UCX: where the loaded UCX would emulate a same-host client's
// gets, a ferry server sends that client packed bodies instead, and a test of lending must then
// reach the server by TCP.
#pragma once

#include <cstdio>
#include <cstdlib>

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
