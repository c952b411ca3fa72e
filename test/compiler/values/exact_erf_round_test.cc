// erf, round-nearest-afz and is-finite (vpu_erf_round.cc) compiled for v3-8 and simulated on
// edge values and a dense sweep: each element against the evaluator's (std::erf, std::round,
// std::isfinite), bit for bit for round-nearest-afz and is-finite, within 6 ulps for erf.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "test/compiler/values/elementwise_values_util.h"

namespace tpusim {
namespace {

using testing::ElementwiseRun;
using testing::ExpectBitExact;
using testing::RunWithArguments;
using testing::UlpDistance;
using testing::Unit;
using testing::Values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Ties both ways (2.5 -> 3, -2.5 -> -3), the f32 just below 1/2, signed zeros, the largest
// non-integral f32s, denormals, infinities and NaN; then quarters and values of every scale.
// is-finite leaves the kernel as an f32 of 0 or 1 (a pred stays inside the fusion).
TEST(ExactErfRound, RoundNearestAfzAndIsFiniteBitForBit) {
  const std::vector<eval::Value> args = {Values(
      hlo::PrimitiveType::kF32, {0.0,        -0.0,           0.5,        -0.5,       1.5,
                                 2.5,        -2.5,           -3.5,       0.49999997, -0.49999997,
                                 0.50000006, 8388607.5,      -8388607.5, 4194303.5,  8388609.0,
                                 1e-40,      -1e-40,         -0.3,       0.99999994, -0.9999999,
                                 1e20,       -1e20,          kInf,       -kInf,      kNaN,
                                 3.4e38,     -1.17549435e-38},
      [](int i) {
        return i < 600 ? (i - 300) * 0.25 : (Unit(i, 41) - 0.5) * std::ldexp(1.0, i % 48 - 8);
      })};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
%finite (x: f32[8,128]) -> f32[8,128] {
  %x = f32[8,128]{1,0} parameter(0)
  %fin = pred[8,128]{1,0} is-finite(%x)
  ROOT %f = f32[8,128]{1,0} convert(%fin)
}
ENTRY %main (x: f32[8,128]) -> (f32[8,128], f32[8,128]) {
  %x = f32[8,128]{1,0} parameter(0)
  %afz = f32[8,128]{1,0} round-nearest-afz(%x)
  %fin = f32[8,128]{1,0} fusion(%x), kind=kLoop, calls=%finite
  ROOT %t = (f32[8,128], f32[8,128]) tuple(%afz, %fin)
})",
                                  args),
                 args);
}

// erf on 65,536 values: the edges (zeros, denormals, the clamp at |x| = 4 and beyond,
// infinities, NaN: exact; tiny normal values, where the rational's constant term, 2/sqrt(pi)
// rounded down, leaves 1 ulp; the host sweep's worst point 2.2787421) and then a dense even
// grid over [-4.5, 4.5]. Within 6 ulps of erff everywhere (an exhaustive host replay of the
// sequence over every f32 measured 6), never beyond +-1.
TEST(ExactErfRound, ErfWithinSixUlpsAndExactAtTheEdges) {
  const std::vector<double> edges = {
      0.0,   -0.0, 1e-45, -1e-45, 1e-40, 4.0,        -4.0,        5.0,       -100.0, 1e30, kInf,
      -kInf, kNaN, 1e-38, 1e-20,  -3e-8, 2.27874207, -2.27874207, 3.6806035, 3.92,   0.5,  -1.0};
  const int kExactEdges = 13;  // zeros, denormals, |x| >= 4, infinities, NaN
  const int kTinyEdges = 16;   // then normal tiny values: x times 2/sqrt(pi) rounded, 1 ulp
  const std::vector<eval::Value> args = {Values(
      hlo::PrimitiveType::kF32, edges, [](int i) { return -4.5 + 9.0 * i / 65536; }, 512)};
  const ElementwiseRun r = RunWithArguments(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[512,128]) -> f32[512,128] {
  %x = f32[512,128]{1,0} parameter(0)
  ROOT %erf = f32[512,128]{1,0} erf(%x)
})",
                                            args);
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  int64_t worst = 0;
  double worst_x = 0;
  for (size_t i = 0; i < args[0].data.size(); ++i) {
    const double x = args[0].data[i], got = r.got[0].data[i], want = r.want[0].data[i];
    const int64_t ulps = UlpDistance(got, want);
    if (static_cast<int>(i) < kTinyEdges) {
      EXPECT_LE(ulps, static_cast<int>(i) < kExactEdges ? 0 : 1) << "erf(" << x << "): " << got;
    }
    EXPECT_LE(ulps, 6) << "erf(" << x << "): simulated " << got << ", evaluator " << want;
    EXPECT_FALSE(std::fabs(got) > 1.0) << "erf(" << x << ")";
    if (ulps > worst) worst = ulps, worst_x = x;
  }
  EXPECT_EQ(r.got[0].data[10], 1.0);   // erf(inf)
  EXPECT_EQ(r.got[0].data[11], -1.0);  // erf(-inf)
  EXPECT_TRUE(std::isnan(r.got[0].data[12]));
  EXPECT_TRUE(std::signbit(r.got[0].data[1]));
  std::printf("worst: %lld ulps at %.9g\n", static_cast<long long>(worst), worst_x);
}

// bf16 operands load widened to f32 and the results round to bf16 on the store, as the
// evaluator rounds its f32 result: round-nearest-afz and is-finite bit for bit, erf within
// one bf16 ulp (the f32 error can move a result across a bf16 rounding boundary).
TEST(ExactErfRound, Bf16OperandsRoundLikeTheEvaluator) {
  const std::vector<eval::Value> args = {Values(
      hlo::PrimitiveType::kBF16, {0.0, -0.0, 0.5, -2.5, 1.5, kInf, -kInf, kNaN, 3.0, 1e-30},
      [](int i) { return (Unit(i, 43) - 0.5) * std::ldexp(1.0, i % 12 - 4); }, 64)};
  const ElementwiseRun r = RunWithArguments(R"(HloModule m, replica_count=8
%finite (x: bf16[64,128]) -> bf16[64,128] {
  %x = bf16[64,128]{1,0} parameter(0)
  %fin = pred[64,128]{1,0} is-finite(%x)
  ROOT %f = bf16[64,128]{1,0} convert(%fin)
}
ENTRY %main (x: bf16[64,128]) -> (bf16[64,128], bf16[64,128], bf16[64,128]) {
  %x = bf16[64,128]{1,0} parameter(0)
  %afz = bf16[64,128]{1,0} round-nearest-afz(%x)
  %fin = bf16[64,128]{1,0} fusion(%x), kind=kLoop, calls=%finite
  %erf = bf16[64,128]{1,0} erf(%x)
  ROOT %t = (bf16[64,128], bf16[64,128], bf16[64,128]) tuple(%afz, %fin, %erf)
})",
                                            args);
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  for (size_t o = 0; o < 3; ++o) {
    for (size_t i = 0; i < r.want[o].data.size(); ++i) {
      EXPECT_LE(UlpDistance(r.got[o].data[i], r.want[o].data[i]), o < 2 ? 0 : 1 << 16)
          << "result " << o << " of " << args[0].data[i] << ": simulated " << r.got[o].data[i]
          << ", evaluator " << r.want[o].data[i];
    }
  }
}

}  // namespace
}  // namespace tpusim
