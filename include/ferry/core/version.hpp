// ferry's version, as the library was built: the one value that `ferry --version`, Python's
// ferry.__version__, the gem, the CMake package and pkg-config all report (the repository's
// VERSION file).
#pragma once

#include "ferry/abi/export.h"

namespace ferry {

/// The version of the ferry library this process loaded, "MAJOR.MINOR.PATCH". A static string;
/// costs nothing.
FERRY_EXPORT const char* Version() noexcept;

}  // namespace ferry
