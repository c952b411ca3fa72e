// The hand-written binary16 conversions against known encodings, and (where the compiler
// has _Float16) against the hardware conversion for every half and many floats.
#include <gtest/gtest.h>

#include <random>

#include "compiler/eval/f16.h"

namespace tpusim::eval {
namespace {

TEST(EvalF16, KnownEncodings) {
  EXPECT_EQ(F32ToF16Bits(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16Bits(-2.0f), 0xc000);
  EXPECT_EQ(F32ToF16Bits(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(F32ToF16Bits(65520.0f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(F32ToF16Bits(0.1f), 0x2e66);
  EXPECT_EQ(F32ToF16Bits(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(F32ToF16Bits(std::ldexp(1.0f, -25)), 0x0000);     // tie to even: 0
  EXPECT_EQ(F32ToF16Bits(std::ldexp(3.0f, -25)), 0x0002);     // tie to even: 2
  EXPECT_EQ(F32ToF16Bits(std::ldexp(1023.0f, -24)), 0x03ff);  // largest subnormal
  EXPECT_EQ(F16BitsToF32(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isinf(F16BitsToF32(0xfc00)));
  EXPECT_TRUE(std::isnan(F16BitsToF32(F32ToF16Bits(std::nanf("")))));
}

#if defined(__FLT16_MAX__) && !defined(__clang__)
TEST(EvalF16, MatchesTheCompilersFloat16) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = F16BitsToF32(static_cast<uint16_t>(h));
    float want = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      continue;
    }
    ASSERT_EQ(f, want) << h;
    ASSERT_EQ(F32ToF16Bits(f), h) << h;
  }
  std::mt19937 rng(3);
  for (int i = 0; i < 1000000; ++i) {
    float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToF16Bits(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
  }
}
#endif

}  // namespace
}  // namespace tpusim::eval
