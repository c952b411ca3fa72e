// The random bits of rng and rng-bit-generator: a counter-based generator, so the simulated
// TPU computes the same stream at vector rate (a few 32-bit multiplies, xors and shifts per
// element, docs/lowering.md) and the evaluator needs no state between elements. Element i of
// a draw is two rounds of a 32-bit integer hash (Wellons' "lowbias32") over i, keyed by the
// draw's 64-bit key: Mix(Mix(i + key_lo) ^ key_hi). Not XLA's Philox/ThreeFry bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace tpusim::eval {

inline constexpr uint32_t kRngMul1 = 0x7feb352du, kRngMul2 = 0x846ca68bu;
inline constexpr int kRngShift1 = 16, kRngShift2 = 15, kRngShift3 = 16;

inline uint32_t RngMix32(uint32_t x) {
  x ^= x >> kRngShift1;
  x *= kRngMul1;
  x ^= x >> kRngShift2;
  x *= kRngMul2;
  x ^= x >> kRngShift3;
  return x;
}

// The bits of element `counter` of the draw keyed by `key`.
inline uint32_t RngBits32(uint64_t key, uint32_t counter) {
  return RngMix32(RngMix32(counter + static_cast<uint32_t>(key)) ^
                  static_cast<uint32_t>(key >> 32));
}

inline uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The key of an rng op's `execution`-th run (0 for an op outside loops): its name and the
// seed pick it, the same on every replica (as XLA's rng with one seed).
inline uint64_t RngOpKey(uint64_t seed, std::string_view name, uint64_t execution) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the name
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return SplitMix64(SplitMix64(seed ^ h) + execution);
}

// rng-bit-generator's key: the seed folded with the state's elements (as 64-bit patterns).
inline uint64_t RngStateKeyStart(uint64_t seed) { return seed * 0x9e3779b97f4a7c15ull; }
inline uint64_t RngStateKeyFold(uint64_t key, uint64_t element) {
  return (key ^ element) * 0x100000001b3ull;
}

// A uniform f32 in [a, b) from 32 bits, computed in f32 as the VPU does: u = (bits >> 8)
// * 2^-24 (exact), a + (b - a) * u rounded at each step, and a for a result that rounds to b.
inline float RngUniformF32(uint32_t bits, float a, float b) {
  const float u = static_cast<float>(static_cast<int32_t>(bits >> 8)) * 0x1p-24f;
  const float width = b - a;
  const float scaled = width * u;
  const float x = a + scaled;
  return x < b ? x : a;
}

// RNG_NORMAL's draw from N(mean, stddev^2) by Box-Muller over the bits of elements 2i and
// 2i + 1, in f32 step by step as the VPU computes it: u1, u2 as for a uniform draw,
// sqrt(log(1 - u1) * -2) * cos(u2 * 2pi) * stddev + mean. The VPU's cosine is a composition
// within a few ulps of cosf (compiler/lowering/vpu/vpu_math.h).
inline constexpr float kRngTwoPiF32 = 6.28318530717958647692f;
inline float RngNormalF32(uint32_t bits1, uint32_t bits2, float mean, float stddev) {
  const float u1 = static_cast<float>(static_cast<int32_t>(bits1 >> 8)) * 0x1p-24f;
  const float u2 = static_cast<float>(static_cast<int32_t>(bits2 >> 8)) * 0x1p-24f;
  const float radius = std::sqrt(std::log(1.0f - u1) * -2.0f);
  const float angle = u2 * kRngTwoPiF32;
  const float scaled = radius * std::cos(angle) * stddev;
  return scaled + mean;
}

}  // namespace tpusim::eval
