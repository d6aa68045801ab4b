// IEEE 754 binary16 conversions shared by views, builders and JSON.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ferry::internal {

/// Widen a binary16 bit pattern to double (exact).
inline double HalfToDouble(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1F;
  const int mant = h & 0x3FF;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

/// Narrow a double to binary16 with round-to-nearest-even; overflow gives infinity.
inline uint16_t DoubleToHalf(double d) {
  uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  if (std::isnan(d)) return static_cast<uint16_t>(sign | 0x7E00);
  double a = std::fabs(d);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | 0x7C00);
  if (a == 0) return sign;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1;    // a = 1.f * 2^exp
  if (exp < -14) {
    // Subnormal: units of 2^-24.
    double units = std::nearbyint(std::ldexp(a, 24));  // default rounding is to nearest even
    if (units >= 1024) return static_cast<uint16_t>(sign | 0x0400);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
  }
  double mant = std::nearbyint(std::ldexp(a, 10 - exp));  // in [1024, 2048]
  if (mant >= 2048) {
    mant /= 2;
    ++exp;
  }
  if (exp > 15) return static_cast<uint16_t>(sign | 0x7C00);
  return static_cast<uint16_t>(sign | ((exp + 15) << 10) | (static_cast<uint16_t>(mant) & 0x3FF));
}

}  // namespace ferry::internal
