// C surface of the library's version.
#include "ferry/core/version.hpp"

#include "ferry/capi/ferry.h"

extern "C" const char* FerryVersion(void) { return ferry::Version(); }
