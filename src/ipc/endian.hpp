// Byte order conversion of body buffers: what each buffer of each type needs, and the swap.
#pragma once

#include <cstdint>

#include "ferry/format/schema_view.hpp"

namespace ferry::ipc::internal {

/// How one buffer's bytes change with byte order.
enum class Swap : int8_t {
  kNone,          // bytes, bitmaps, int8 type ids, fixed-size binary, variadic data
  kWidth2,        // every 2-byte element
  kWidth4,        // every 4-byte element
  kWidth8,        // every 8-byte element
  kReverse16,     // decimal128: the 16-byte integer reversed
  kReverse32,     // decimal256: the 32-byte integer reversed
  kMonthDayNano,  // int32 months, int32 days, int64 nanoseconds
  kView,          // binary/string views: int32 length; inline bytes or prefix, index, offset
};

/// The conversion buffer `index` (of the type's fixed buffers) needs.
Swap SwapOf(const SchemaView& type, int32_t index);

/// Convert `size` bytes from `src` into `dst` (which may not alias). `to_native` tells the
/// direction, which matters for views: their length decides what else is swapped.
void SwapBytes(Swap kind, const uint8_t* src, uint8_t* dst, int64_t size, bool to_native);

}  // namespace ferry::ipc::internal
