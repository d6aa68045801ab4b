// Internal to the flight layer: the order gRPC keeps between a call's callbacks, told to
// ThreadSanitizer.
#pragma once

#include "ferry/core/sanitizers.hpp"

#if FERRY_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace ferry::flight::internal {

// gRPC runs a reactor's callbacks one at a time, each after the operation that caused it, on
// whichever of its threads is free, and orders them with its own synchronisation. The gRPC ferry
// links is not instrumented, so ThreadSanitizer cannot see that order; ferry states it. Each
// reactor calls GrpcHandOff(this) once it is done with its members, just before it starts an
// operation (StartRead, StartWrite, Finish, ...), and GrpcTakeBack(this) first thing in each
// callback; the server hands off its service before gRPC starts, and each call takes it back;
// a slice lent to gRPC hands off its keep-alive, which gRPC's release callback takes back. Both
// do nothing outside ThreadSanitizer builds.

/// Everything this thread did so far happens before the callbacks of the operation it is about
/// to start on `reactor` (or before the calls of a service about to be started).
inline void GrpcHandOff(const void* reactor) {
#if FERRY_TSAN
  __tsan_release(const_cast<void*>(reactor));
#else
  (void)reactor;
#endif
}

/// In a callback of `reactor` (or a call of a service): what was done before the hand-off
/// happens before what the callback does.
inline void GrpcTakeBack(const void* reactor) {
#if FERRY_TSAN
  __tsan_acquire(const_cast<void*>(reactor));
#else
  (void)reactor;
#endif
}

}  // namespace ferry::flight::internal
