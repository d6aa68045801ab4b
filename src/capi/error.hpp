// Mapping ferry::Status onto the C surface's codes and FerryError messages.
#pragma once

#include <cerrno>
#include <cstdio>
#include <exception>
#include <new>

#include "ferry/capi/ferry.h"
#include "ferry/core/status.hpp"
#include "ferry/core/status_code.hpp"

namespace ferry::capi::internal {

inline FerryErrorCode SetError(struct FerryError* error, int code, const char* message) {
  if (error != nullptr) std::snprintf(error->message, sizeof(error->message), "%s", message);
  return code;
}

inline FerryErrorCode FromStatus(const Status& st, struct FerryError* error) {
  if (st.ok()) return 0;
  return SetError(error, CErrorCodeOf(st), st.message().c_str());
}

/// Run `body` (returning a Status) and turn any escaping C++ exception into an error code, so no
/// exception ever crosses the C boundary.
template <typename Body>
FerryErrorCode Guard(struct FerryError* error, Body&& body) noexcept {
  try {
    return FromStatus(body(), error);
  } catch (const std::bad_alloc&) {
    return FromStatus(Status::OutOfMemory("out of memory"), error);
  } catch (const std::exception& e) {
    return FromStatus(Status::Internal(e.what()), error);
  } catch (...) {
    return FromStatus(Status::Internal("unknown C++ exception"), error);
  }
}

}  // namespace ferry::capi::internal
