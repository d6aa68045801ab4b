// Low-precision float names and decoding, from each type's exponent and mantissa widths, bias and
// special-value convention.
#include "ferry/memview/low_float.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace ferry::memview {

namespace {

// How a type spends its top codes: IEEE-style infinities and NaNs, "fn" (no infinities; NaN where
// exponent and mantissa are all ones), "fnuz" (NaN is the negative-zero pattern; no infinities),
// or none at all (every code is finite).
enum class Specials : uint8_t { kIeee, kFn, kFnuz, kFinite, kExponentOnly };

struct Info {
  LowFloat type;
  std::string_view name;
  int exp_bits;
  int man_bits;
  int bias;
  Specials specials;
};

constexpr std::array<Info, 14> kTypes{{
    {LowFloat::kFloat8E3M4, "float8_e3m4", 3, 4, 3, Specials::kIeee},
    {LowFloat::kFloat8E4M3, "float8_e4m3", 4, 3, 7, Specials::kIeee},
    {LowFloat::kFloat8E4M3B11Fnuz, "float8_e4m3b11fnuz", 4, 3, 11, Specials::kFnuz},
    {LowFloat::kFloat8E4M3Fn, "float8_e4m3fn", 4, 3, 7, Specials::kFn},
    {LowFloat::kFloat8E4M3Fnuz, "float8_e4m3fnuz", 4, 3, 8, Specials::kFnuz},
    {LowFloat::kFloat8E5M2, "float8_e5m2", 5, 2, 15, Specials::kIeee},
    {LowFloat::kFloat8E5M2Fnuz, "float8_e5m2fnuz", 5, 2, 16, Specials::kFnuz},
    {LowFloat::kFloat8E8M0Fnu, "float8_e8m0fnu", 8, 0, 127, Specials::kExponentOnly},
    {LowFloat::kFloat6E2M3Fn, "float6_e2m3fn", 2, 3, 1, Specials::kFinite},
    {LowFloat::kFloat6E3M2Fn, "float6_e3m2fn", 3, 2, 3, Specials::kFinite},
    {LowFloat::kFloat4E2M1Fn, "float4_e2m1fn", 2, 1, 1, Specials::kFinite},
    {LowFloat::kFloat4E2M1FnX2, "float4_e2m1fn_x2", 2, 1, 1, Specials::kFinite},
    {LowFloat::kFloat16, "float16", 5, 10, 15, Specials::kIeee},
    {LowFloat::kBFloat16, "bfloat16", 8, 7, 127, Specials::kIeee},
}};

const Info* Find(LowFloat type) noexcept {
  for (const Info& info : kTypes) {
    if (info.type == type) return &info;
  }
  return nullptr;
}

}  // namespace

std::string_view LowFloatName(LowFloat type) noexcept {
  const Info* info = Find(type);
  return info == nullptr ? std::string_view() : info->name;
}

LowFloat LowFloatFromName(std::string_view name) noexcept {
  for (const Info& info : kTypes) {
    if (info.name == name) return info.type;
  }
  return LowFloat::kNone;
}

int LowFloatBits(LowFloat type) noexcept {
  const Info* info = Find(type);
  if (info == nullptr) return 0;
  return info->specials == Specials::kExponentOnly ? 8 : 1 + info->exp_bits + info->man_bits;
}

int LowFloatBytes(LowFloat type) noexcept {
  if (Find(type) == nullptr) return 0;
  return type == LowFloat::kFloat16 || type == LowFloat::kBFloat16 ? 2 : 1;
}

int LowFloatValuesPerByte(LowFloat type) noexcept {
  return type == LowFloat::kFloat4E2M1FnX2 ? 2 : 1;
}

double DecodeLowFloat(LowFloat type, uint32_t bits) noexcept {
  const Info* info = Find(type);
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (info == nullptr) return kNaN;
  if (info->specials == Specials::kExponentOnly) {  // 2^(e - 127), no sign, 0xFF is NaN
    return bits == 0xFF ? kNaN : std::ldexp(1.0, static_cast<int>(bits) - info->bias);
  }
  const int width = 1 + info->exp_bits + info->man_bits;
  const unsigned code = bits & ((1U << width) - 1U);
  const bool negative = (code >> (width - 1)) != 0;
  const unsigned exp_max = (1U << info->exp_bits) - 1U;
  const unsigned exponent = (code >> info->man_bits) & exp_max;
  const unsigned mantissa = code & ((1U << info->man_bits) - 1U);
  switch (info->specials) {
    case Specials::kIeee:
      if (exponent == exp_max) {
        if (mantissa != 0) return kNaN;
        return negative ? -std::numeric_limits<double>::infinity()
                        : std::numeric_limits<double>::infinity();
      }
      break;
    case Specials::kFn:
      if (exponent == exp_max && mantissa == (1U << info->man_bits) - 1U) return kNaN;
      break;
    case Specials::kFnuz:
      if (negative && exponent == 0 && mantissa == 0) return kNaN;
      break;
    default:
      break;
  }
  const double fraction = std::ldexp(static_cast<double>(mantissa), -info->man_bits);
  const double magnitude =
      exponent == 0 ? std::ldexp(fraction, 1 - info->bias)
                    : std::ldexp(1.0 + fraction, static_cast<int>(exponent) - info->bias);
  return negative ? -magnitude : magnitude;
}

}  // namespace ferry::memview
