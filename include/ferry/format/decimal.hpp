// Decimal text <-> little-endian two's complement integers of 32 to 256 bits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/abi/export.h"
#include "ferry/core/status.hpp"

namespace ferry {

/// Parse base-10 text ("-12.345", "7", "1e3" is not accepted) into `bitwidth / 8` little-endian
/// bytes of the unscaled value at `scale`. Fails when there are more significant digits than
/// `precision` or more fractional digits than `scale` allows without losing non-zero digits.
FERRY_EXPORT Status ParseDecimal(std::string_view text, int32_t precision, int32_t scale,
                                 int32_t bitwidth, uint8_t* out);

/// Render `bitwidth / 8` little-endian two's complement bytes as base-10 text at `scale`.
FERRY_EXPORT std::string DecimalToString(const uint8_t* bytes, int32_t bitwidth, int32_t scale);

}  // namespace ferry
