// C surface of the error table (ferry/core/status_code.hpp): a code's name.
#include "ferry/core/status_code.hpp"

#include "ferry/capi/ferry.h"

extern "C" const char* FerryErrorCodeName(FerryErrorCode code) {
  if (code == 0) return "OK";
  for (const ferry::StatusCodeInfo& row : ferry::StatusCodeTable()) {
    if (row.c_code == code) return row.name;
  }
  return "Unknown";
}
