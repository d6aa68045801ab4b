// ferry::Version: the version string CMake compiles in from the VERSION file.
#include "ferry/core/version.hpp"

#ifndef FERRY_VERSION_STRING
#error "FERRY_VERSION_STRING is defined by CMake from the VERSION file"
#endif

namespace ferry {

const char* Version() noexcept { return FERRY_VERSION_STRING; }

}  // namespace ferry
