// The elementwise ops built from the VPU's rounding and integer instructions, or composed
// (vpu_math.h), compiled for v3-8 and simulated on chosen edge values: each result element
// against the evaluator's, bit for bit where the composition is exact, else within a
// stated bound.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test/compiler/elementwise_values_util.h"

namespace tpusim {
namespace {

using testing::ElementwiseRun;
using testing::RunWithArguments;
using testing::UlpDistance;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// 1024 values (one f32[8,128]): `edges` first, then `spread(i)`.
template <typename F>
eval::Value Values(hlo::PrimitiveType t, std::vector<double> edges, F spread) {
  for (int i = static_cast<int>(edges.size()); i < 1024; ++i) edges.push_back(spread(i));
  return eval::Value::FromVector(t, {8, 128}, edges);
}

// A pseudo-random double in [0, 1) from i (a fixed hash: the same on every run).
double Unit(int i, uint32_t salt) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ salt;
  h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
  return h / 4294967296.0;
}

// Every element of every result equal to the evaluator's (NaN to NaN, zeros by sign).
void ExpectBitExact(const ElementwiseRun& r, const std::vector<eval::Value>& args) {
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  ASSERT_EQ(r.got.size(), r.want.size());
  for (size_t o = 0; o < r.want.size(); ++o)
    for (size_t i = 0; i < r.want[o].data.size(); ++i)
      ASSERT_EQ(UlpDistance(r.got[o].data[i], r.want[o].data[i]), 0)
          << "result " << o << " element " << i << " of argument " << args[0].data[i]
          << (args.size() > 1 ? ", " + std::to_string(args[1].data[i]) : "") << ": simulated "
          << r.got[o].data[i] << ", evaluator " << r.want[o].data[i];
}

constexpr const char* kRounding = R"(HloModule m, replica_count=8
ENTRY %main (x: f32[8,128]) -> (f32[8,128], f32[8,128], f32[8,128], f32[8,128], s32[8,128]) {
  %x = f32[8,128]{1,0} parameter(0)
  %floor = f32[8,128]{1,0} floor(%x)
  %ceil = f32[8,128]{1,0} ceil(%x)
  %round = f32[8,128]{1,0} round-nearest-even(%x)
  %sign = f32[8,128]{1,0} sign(%x)
  %int = s32[8,128]{1,0} convert(%x)
  ROOT %t = (f32[8,128], f32[8,128], f32[8,128], f32[8,128], s32[8,128]) tuple(%floor, %ceil, %round, %sign, %int)
})";

// Ties (round-nearest-even: 0.5 -> 0, 2.5 -> 2), signed zeros, the largest non-integral
// f32s, denormals, saturation and NaN of the s32 convert.
TEST(ExactElementwise, FloorCeilRoundSignAndConvertToS32) {
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kF32,
             {0.0,          -0.0,         0.5,           -0.5,          1.5,       2.5,   -2.5,
              -3.5,         0.49999997,   8388607.5,     -8388607.5,    8388609.0, 1e-40, -1e-40,
              2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0, 1e20,      -1e20, kInf,
              -kInf,        kNaN,         7.0,           -7.0,          -0.75},
             [](int i) {
               return i < 600 ? (i - 300) * 0.25 : (Unit(i, 1) - 0.5) * std::ldexp(1.0, i % 40);
             })};
  ExpectBitExact(RunWithArguments(kRounding, args), args);
}

constexpr const char* kSineCosine = R"(HloModule m, replica_count=8
ENTRY %main (x: f32[8,128]) -> (f32[8,128], f32[8,128]) {
  %x = f32[8,128]{1,0} parameter(0)
  %sin = f32[8,128]{1,0} sine(%x)
  %cos = f32[8,128]{1,0} cosine(%x)
  ROOT %t = (f32[8,128], f32[8,128]) tuple(%sin, %cos)
})";

// sine and cosine for |x| <= 10^4: within 4 ulps of the evaluator's sinf/cosf, or within
// 2^-40 |x| where the result is near zero (the reduction's error is absolute: pi/2 is held to
// about 2^-44 relative; sin(3 pi) is 14 ulps off, 2.5e-14); +-0, NaN and inf exactly.
TEST(ExactElementwise, SineAndCosineWithinFourUlpsToTenThousand) {
  const double pi = 3.14159265358979323846;
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kF32,
             {0.0, -0.0, kNaN, kInf, -kInf, pi, -pi, pi / 2, pi / 4, 3 * pi / 4, 1e-20, -1e-30, 1e4,
              -1e4, 9999.5, 6.2831855, 3.1415927},
             [&](int i) {
               if (i < 300) return (Unit(i, 7) - 0.5) * 2 * pi;  // the first turn
               if (i < 400) return (i - 350) * pi / 4;           // on the octant edges
               return (Unit(i, 9) - 0.5) * 2e4;
             })};
  const ElementwiseRun r = RunWithArguments(kSineCosine, args);
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  int64_t worst_ulps = 0;
  double worst_abs = 0;
  for (size_t o = 0; o < 2; ++o)
    for (size_t i = 0; i < 1024; ++i) {
      const double got = r.got[o].data[i], want = r.want[o].data[i];
      const int64_t ulps = UlpDistance(got, want);
      if (i < 5) {  // zeros, NaN, inf: exact
        EXPECT_EQ(ulps, 0) << "result " << o << " of " << args[0].data[i];
        continue;
      }
      const double abs = std::fabs(got - want);
      const bool near_zero = abs <= 0x1p-40 * std::max(1.0, std::fabs(args[0].data[i]));
      worst_ulps = std::max(worst_ulps, ulps > 4 && near_zero ? 0 : ulps);
      worst_abs = std::max(worst_abs, abs);
      EXPECT_TRUE(ulps <= 4 || near_zero)
          << (o ? "cos(" : "sin(") << args[0].data[i] << "): simulated " << got << ", evaluator "
          << want << " (" << ulps << " ulps)";
    }
  EXPECT_LE(worst_ulps, 4);
  std::printf("worst: %lld ulps away from zeros; %.3g absolute\n",
              static_cast<long long>(worst_ulps), worst_abs);
}

}  // namespace
}  // namespace tpusim
