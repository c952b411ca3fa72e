// bfloat16, the MXU's input format: the top 16 bits of an IEEE f32. Conversion from
// f32 rounds to nearest, ties to even; NaN stays NaN (quiet).
#pragma once

#include <bit>
#include <cstdint>

namespace tpusim::isa {

inline uint16_t F32ToBf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float Bf16ToF32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// f32 rounded to the nearest bf16 value, kept as f32.
inline float RoundToBf16(float f) { return Bf16ToF32(F32ToBf16(f)); }

}  // namespace tpusim::isa
