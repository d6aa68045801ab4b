// Internal to the dipc layer: fault injection for the fault suite (tests/faults). Compiled in only
// with the CMake option FERRY_FAULT_INJECTION, which the test tree sets and no package does (the
// wheel, the gem, an installed Release build); without it a FaultPoint is an empty inline call.
#pragma once

#include <functional>

namespace ferry::dipc::internal {

/// A point where the fault suite can stop a process. With FERRY_FAULT_PAUSE=ROLE:PHASE[:N] in
/// the environment (ROLE server or client; PHASE want_data, metadata, body or free), the N-th
/// time (1 by default) this process reaches that point it prints `ferry-fault: paused at ROLE
/// PHASE` on stderr and waits there, so the test can kill it, stop it or close it right there.
/// It carries on once the process was stopped and continued (SIGSTOP, SIGCONT), once
/// `cancelled()` says so (looked at every 100 ms), or after ten minutes; SIGCONT wakes it at
/// once, through a pipe. Without the variable it costs one comparison; without
/// FERRY_FAULT_INJECTION, nothing.
#ifdef FERRY_FAULT_INJECTION
void FaultPoint(const char* role, const char* phase, const std::function<bool()>& cancelled = {});
#else
inline void FaultPoint(const char* /*role*/, const char* /*phase*/,
                       const std::function<bool()>& /*cancelled*/ = {}) {}
#endif

}  // namespace ferry::dipc::internal
