// The byte order of the machine ferry runs on, as the memory-view formats need it.
#pragma once

#include <bit>

namespace ferry::memview::internal {

/// True on a little-endian host: the order that native ('=' or '@') formats mean.
inline constexpr bool kHostLittle = std::endian::native == std::endian::little;

}  // namespace ferry::memview::internal
