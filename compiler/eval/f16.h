// IEEE binary16 conversions written out (clang has no _Float16 on every x86 target):
// f32 -> f16 rounds to nearest, ties to even; overflow gives infinity; NaN stays NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tpusim::eval {

inline uint16_t F32ToF16Bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  uint32_t value, shift;
  if (e <= 0) {  // half subnormal: m x 2^-24
    shift = 126 - exp;
    if (shift > 24) return static_cast<uint16_t>(sign);
    value = mant | 0x800000;
  } else {
    shift = 13;
    value = (static_cast<uint32_t>(e) << 23) | mant;  // exponent rides along; carries propagate
  }
  uint32_t m = value >> shift, rem = value & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (m & 1))) ++m;
  return static_cast<uint16_t>(sign | m);
}

inline float F16BitsToF32(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? std::nanf("") : INFINITY;
  else
    v = std::ldexp(static_cast<float>(1024 + mant), exp - 25);
  return sign ? -v : v;
}

}  // namespace tpusim::eval
