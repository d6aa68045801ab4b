// Format strings of the Arrow C data interface: the parts of one, parsed and printed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/format/type.hpp"

namespace ferry {

/// The parts of a format string alone, without the rest of a schema node.
struct FERRY_EXPORT FormatInfo {
  TypeId type = TypeId::kUninitialized;
  int32_t fixed_size = 0;
  int32_t decimal_bitwidth = 0;
  int32_t decimal_precision = 0;
  int32_t decimal_scale = 0;
  TimeUnit time_unit = TimeUnit::kSecond;
  std::string_view timezone;
  std::string_view union_type_ids_text;
  std::vector<int8_t> union_type_ids;
};

/// Parse one format string. Errors name the character, its 0-based position and why, for
/// example `format "tsz:": unexpected 'z' at position 2: expected a time unit (s, m, u, n)`.
FERRY_EXPORT Result<FormatInfo> ParseFormat(std::string_view format);

/// Emit the format string for `info` (the inverse of ParseFormat).
FERRY_EXPORT Result<std::string> FormatToString(const FormatInfo& info);

}  // namespace ferry
