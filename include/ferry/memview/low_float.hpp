// Low-precision float items (IEEE half, bfloat16, and DLPack 1.1's fp8, fp6 and fp4): their
// names in item formats, their widths, and decoding a stored value to a double.
#pragma once

#include <cstdint>
#include <string_view>

#include "ferry/abi/export.h"

namespace ferry::memview {

/// A low-precision float type. float16 (IEEE half) and bfloat16 take two bytes per item, in the
/// byte order the format gives; the others one: fp8 fills it, fp6 and fp4 sit in its low bits
/// (DLPack's "padded" layout), and float4_e2m1fn_x2 packs two fp4 values, the first in the low
/// nibble (DLPack's fp4 with 2 lanes, torch's float4_e2m1fn_x2).
enum class LowFloat : uint8_t {
  kNone = 0,
  kFloat8E3M4,
  kFloat8E4M3,
  kFloat8E4M3B11Fnuz,
  kFloat8E4M3Fn,
  kFloat8E4M3Fnuz,
  kFloat8E5M2,
  kFloat8E5M2Fnuz,
  kFloat8E8M0Fnu,
  kFloat6E2M3Fn,
  kFloat6E3M2Fn,
  kFloat4E2M1Fn,
  kFloat4E2M1FnX2,
  kFloat16,
  kBFloat16,
};

/// The `ItemComponent::format` letter of low-float members; `low_float` says which type. In an
/// item format the type is written by name in braces: `{float8_e4m3fn}`, `{float4_e2m1fn_x2}2`.
inline constexpr char kLowFloatLetter = '{';

/// The type's name as DLPack, ml_dtypes and torch spell it ("float8_e4m3fn"); "" for kNone.
FERRY_EXPORT std::string_view LowFloatName(LowFloat type) noexcept;
/// The type named `name` (without braces), or kNone.
FERRY_EXPORT LowFloat LowFloatFromName(std::string_view name) noexcept;
/// Bits of one value: 16, 8, 6 or 4 (0 for kNone).
FERRY_EXPORT int LowFloatBits(LowFloat type) noexcept;
/// Bytes of one item: 2 for float16 and bfloat16, else 1 (0 for kNone).
FERRY_EXPORT int LowFloatBytes(LowFloat type) noexcept;
/// Values held by one byte: 2 for float4_e2m1fn_x2, else 1.
FERRY_EXPORT int LowFloatValuesPerByte(LowFloat type) noexcept;
/// The value stored in the low LowFloatBits(type) bits of `bits` (the higher bits are ignored), as
/// a double: exact, NaN for the type's NaN patterns and +-inf where the type has infinities.
FERRY_EXPORT double DecodeLowFloat(LowFloat type, uint32_t bits) noexcept;

}  // namespace ferry::memview
