// The elementwise ops built from the VPU's rounding and integer instructions, or composed
// (vpu_math.h), compiled for v3-8 and simulated on chosen edge values: each result element
// against the evaluator's, bit for bit where the composition is exact, else within a
// stated bound.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test/compiler/values/elementwise_values_util.h"
#include "test/compiler/values/sim_values_util.h"

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

// fmod's sign follows x; quotients rounded up to an integer (x just below a multiple of y),
// y = +-0 and +-inf, x = +-inf and NaN; then |x / y| up to 2^20. Bit for bit.
TEST(ExactElementwise, RemainderAndClampOfF32) {
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kF32,
             {5.5, -5.5, 5.5, -5.5, 6.0, -6.0, 0.0, -0.0, 3.0, 1.0, kInf, -kInf, kNaN, 2.0,
              0.99999994, 1e30, 7.0, 1e-30, 16777215.0},
             [](int i) { return (Unit(i, 3) - 0.5) * std::ldexp(1.0, i % 24 - 4); }),
      Values(hlo::PrimitiveType::kF32,
             {2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 2.0, 2.0, 0.0, kInf, 2.0, 2.0, 2.0, kNaN, 0.1, 3.0,
              -kInf, 1e-31, 0.3333333},
             [](int i) { return (Unit(i, 5) - 0.5) * std::ldexp(1.0, i % 7 - 3); })};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[8,128], y: f32[8,128]) -> (f32[8,128], f32[8,128]) {
  %x = f32[8,128]{1,0} parameter(0)
  %y = f32[8,128]{1,0} parameter(1)
  %rem = f32[8,128]{1,0} remainder(%x, %y)
  %lo = f32[] constant(-1)
  %hi = f32[] constant(0.5)
  %blo = f32[8,128]{1,0} broadcast(%lo), dimensions={}
  %bhi = f32[8,128]{1,0} broadcast(%hi), dimensions={}
  %clamp = f32[8,128]{1,0} clamp(%blo, %x, %bhi)
  ROOT %t = (f32[8,128], f32[8,128]) tuple(%rem, %clamp)
})",
                                  args),
                 args);
}

// XLA's maximum and minimum propagate NaN (fmax would return the other operand), in
// elementwise ops, ReLU and max-reductions; equal operands give the second (max(-0, +0)).
TEST(ExactElementwise, MaximumMinimumAndReduceMaxPropagateNan) {
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kF32, {kNaN, 1.0, kNaN, -0.0, 0.0, -kInf, kInf, kNaN, -1.0},
             [](int i) { return i == 300 || i == 777 ? kNaN : Unit(i, 7) - 0.5; }),
      Values(hlo::PrimitiveType::kF32, {2.0, kNaN, kNaN, 0.0, -0.0, kNaN, 1.0, -kInf, -0.0},
             [](int i) { return Unit(i, 9) - 0.5; })};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[8,128], y: f32[8,128]) -> (f32[8,128], f32[8,128], f32[8,128], f32[8]) {
  %x = f32[8,128]{1,0} parameter(0)
  %y = f32[8,128]{1,0} parameter(1)
  %max = f32[8,128]{1,0} maximum(%x, %y)
  %min = f32[8,128]{1,0} minimum(%x, %y)
  %zero = f32[] constant(0)
  %zeros = f32[8,128]{1,0} broadcast(%zero), dimensions={}
  %relu = f32[8,128]{1,0} maximum(%x, %zeros)
  %ninf = f32[] constant(-inf)
  %rowmax = f32[8]{0} reduce(%x, %ninf), dimensions={1}, to_apply=%max
  ROOT %t = (f32[8,128], f32[8,128], f32[8,128], f32[8]) tuple(%max, %min, %relu, %rowmax)
})",
                                  args),
                 args);
}

// s32 arithmetic, logic, order and conversions over the whole range: wrapping multiply and
// negate (INT32_MIN), abs, sign, clamp, not, and, or, xor, every compare direction (selects
// of them), and converts to bf16 (via f32, as XLA rounds; back to f32 in the same fusion: no kernel
// stores bf16 from s32 operands) and pred, with and, or, xor and not of preds.
TEST(ExactElementwise, S32ArithmeticLogicComparesAndConverts) {
  auto spread = [](uint32_t salt) {
    return [salt](int i) {
      const uint32_t bits = static_cast<uint32_t>(Unit(i, salt) * 4294967296.0);
      return static_cast<double>(static_cast<int32_t>(i % 3 ? bits : bits >> (i % 29)));
    };
  };
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kS32,
             {0, -1, 1, 2147483647, -2147483648.0, -2147483648.0, 7, -7, 65536, 16777217, -5, 5},
             spread(11)),
      Values(hlo::PrimitiveType::kS32, {0, 1, -1, 2147483647, -1, 0, -7, 7, 65536, 3, 5, -5},
             spread(13))};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
%lt (a: s32[8,128], b: s32[8,128]) -> s32[8,128] {
  %a = s32[8,128]{1,0} parameter(0)
  %b = s32[8,128]{1,0} parameter(1)
  %c = pred[8,128]{1,0} compare(%a, %b), direction=LT
  ROOT %s = s32[8,128]{1,0} select(%c, %a, %b)
}
%logic (a: s32[8,128], b: s32[8,128]) -> s32[8,128] {
  %a = s32[8,128]{1,0} parameter(0)
  %b = s32[8,128]{1,0} parameter(1)
  %ge = pred[8,128]{1,0} compare(%a, %b), direction=GE
  %eq = pred[8,128]{1,0} compare(%a, %b), direction=EQ
  %nz = pred[8,128]{1,0} convert(%b)
  %both = pred[8,128]{1,0} and(%ge, %nz)
  %either = pred[8,128]{1,0} or(%eq, %both)
  %odd = pred[8,128]{1,0} xor(%either, %ge)
  %none = pred[8,128]{1,0} not(%odd)
  ROOT %flags = s32[8,128]{1,0} convert(%none)
}
%to_bf16 (a: s32[8,128]) -> f32[8,128] {
  %a = s32[8,128]{1,0} parameter(0)
  %bf = bf16[8,128]{1,0} convert(%a)
  ROOT %f = f32[8,128]{1,0} convert(%bf)
}
ENTRY %main (a: s32[8,128], b: s32[8,128]) -> (s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], f32[8,128], s32[8,128], s32[8,128]) {
  %a = s32[8,128]{1,0} parameter(0)
  %b = s32[8,128]{1,0} parameter(1)
  %mul = s32[8,128]{1,0} multiply(%a, %b)
  %neg = s32[8,128]{1,0} negate(%a)
  %abs = s32[8,128]{1,0} abs(%a)
  %sign = s32[8,128]{1,0} sign(%a)
  %max = s32[8,128]{1,0} maximum(%a, %b)
  %min = s32[8,128]{1,0} minimum(%a, %b)
  %lo = s32[] constant(-100)
  %blo = s32[8,128]{1,0} broadcast(%lo), dimensions={}
  %clamp = s32[8,128]{1,0} clamp(%blo, %a, %b)
  %not = s32[8,128]{1,0} not(%a)
  %and = s32[8,128]{1,0} and(%a, %b)
  %or = s32[8,128]{1,0} or(%a, %b)
  %xor = s32[8,128]{1,0} xor(%a, %b)
  %bf = f32[8,128]{1,0} fusion(%a), kind=kLoop, calls=%to_bf16
  %sel = s32[8,128]{1,0} fusion(%a, %b), kind=kLoop, calls=%lt
  %flags = s32[8,128]{1,0} fusion(%a, %b), kind=kLoop, calls=%logic
  ROOT %t = (s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], s32[8,128], f32[8,128], s32[8,128], s32[8,128]) tuple(%mul, %neg, %abs, %sign, %max, %min, %clamp, %not, %and, %or, %xor, %bf, %sel, %flags)
})",
                                  args),
                 args);
}

// u32 order as XLA's: compares, maximum, minimum and clamp through the signed order of
// x ^ 0x80000000 (before: timing-only, the f32 instructions on the bit patterns).
TEST(ExactElementwise, U32OrderComparesMaximumMinimumAndClamp) {
  auto spread = [](uint32_t salt) {
    return [salt](int i) {
      const uint32_t bits = static_cast<uint32_t>(Unit(i, salt) * 4294967296.0);
      return static_cast<double>(i % 3 ? bits : bits >> (i % 29));
    };
  };
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kU32,
             {0, 1, 2147483647, 2147483648.0, 4294967295.0, 2147483648.0, 7, 65536, 4294967295.0},
             spread(17)),
      Values(hlo::PrimitiveType::kU32,
             {0, 2147483648.0, 2147483648.0, 2147483647, 0, 4294967295.0, 7, 3, 4294967294.0},
             spread(19))};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
%lt (a: u32[8,128], b: u32[8,128]) -> u32[8,128] {
  %a = u32[8,128]{1,0} parameter(0)
  %b = u32[8,128]{1,0} parameter(1)
  %c = pred[8,128]{1,0} compare(%a, %b), direction=LT
  ROOT %s = u32[8,128]{1,0} select(%c, %a, %b)
}
%ge (a: u32[8,128], b: u32[8,128]) -> u32[8,128] {
  %a = u32[8,128]{1,0} parameter(0)
  %b = u32[8,128]{1,0} parameter(1)
  %c = pred[8,128]{1,0} compare(%a, %b), direction=GE
  ROOT %s = u32[8,128]{1,0} select(%c, %a, %b)
}
ENTRY %main (a: u32[8,128], b: u32[8,128]) -> (u32[8,128], u32[8,128], u32[8,128], u32[8,128], u32[8,128]) {
  %a = u32[8,128]{1,0} parameter(0)
  %b = u32[8,128]{1,0} parameter(1)
  %max = u32[8,128]{1,0} maximum(%a, %b)
  %min = u32[8,128]{1,0} minimum(%a, %b)
  %lo = u32[] constant(100)
  %blo = u32[8,128]{1,0} broadcast(%lo), dimensions={}
  %clamp = u32[8,128]{1,0} clamp(%blo, %a, %b)
  %sel = u32[8,128]{1,0} fusion(%a, %b), kind=kLoop, calls=%lt
  %sge = u32[8,128]{1,0} fusion(%a, %b), kind=kLoop, calls=%ge
  ROOT %t = (u32[8,128], u32[8,128], u32[8,128], u32[8,128], u32[8,128]) tuple(%max, %min, %clamp, %sel, %sge)
})",
                                  args),
                 args);
}

// pow with an array base: signs of negative bases to integral powers, NaN for non-integral
// ones, zeros and infinities, x^0 = 1^y = 1 with NaNs. Within 4 ulps plus |y log |x|| ulps of
// powf (exp of a rounded y log |x| carries its rounding times that).
TEST(ExactElementwise, PowerWithAnArrayBase) {
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kF32, {-2.0, -2.0, -2.0, -0.0, -0.0, -0.0, 0.0, 0.0,  -kInf, -kInf,
                                        kNaN, kNaN, 1.0,  1.0,  -1.5, 2.0,  0.5, kInf, 1e-3,  10.0},
             [](int i) { return (Unit(i, 21) - (i % 4 ? 0.2 : 0.5)) * std::ldexp(1.0, i % 10); }),
      Values(hlo::PrimitiveType::kF32, {3.0, 2.0, 0.5,  3.0,  -3.0, 0.5,   -1.0, 0.0,  3.0, 0.5,
                                        0.0, 1.0, kNaN, kInf, -4.0, -kInf, kInf, -2.0, 7.5, -30.0},
             [](int i) {
               return i % 3 ? (Unit(i, 23) - 0.5) * 16 : static_cast<double>(i % 13) - 6;
             })};
  const ElementwiseRun r = RunWithArguments(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[8,128], y: f32[8,128]) -> f32[8,128] {
  %x = f32[8,128]{1,0} parameter(0)
  %y = f32[8,128]{1,0} parameter(1)
  ROOT %pow = f32[8,128]{1,0} power(%x, %y)
})",
                                            args);
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  int64_t worst = 0;
  for (size_t i = 0; i < 1024; ++i) {
    const double x = args[0].data[i], y = args[1].data[i];
    const double amplification =
        std::isfinite(y * std::log(std::fabs(x))) ? std::fabs(y * std::log(std::fabs(x))) : 0;
    const int64_t ulps = UlpDistance(r.got[0].data[i], r.want[0].data[i]);
    worst = std::max(worst, ulps);
    EXPECT_LE(static_cast<double>(ulps), 4 + amplification)
        << "pow(" << x << ", " << y << "): simulated " << r.got[0].data[i] << ", evaluator "
        << r.want[0].data[i];
  }
  std::printf("worst: %lld ulps\n", static_cast<long long>(worst));
}

// s32 divide and remainder with XLA's semantics: truncation, x / 0 = -1, x % 0 = x,
// INT32_MIN / -1 = INT32_MIN, INT32_MIN % -1 = 0; quotients near 2^31 and divisors near
// +-2^31, then 65,516 random pairs of every magnitude. Bit for bit.
TEST(ExactElementwise, S32DivideAndRemainder) {
  auto spread = [](uint32_t salt) {
    return [salt](int i) {
      const uint32_t bits = static_cast<uint32_t>(Unit(i, salt) * 4294967296.0);
      return static_cast<double>(static_cast<int32_t>(bits) >> (i % 31));
    };
  };
  const double kMin = -2147483648.0, kMax = 2147483647.0;
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kS32,
             {7,    -7,   7,    -7,  5,    0,       kMin,     kMin, kMin,     kMin,
              kMax, kMax, kMin, 1e9, -1e9, 1 << 30, 16777217, 100,  kMin + 1, kMax},
             spread(31), 512),
      Values(
          hlo::PrimitiveType::kS32, {2, 2,    -2,   -2, 0, 0,  -1,       1,    kMin, 0,
                                     1, kMin, kMax, 3,  7, -3, 16777216, kMin, -1,   kMax - 1},
          [&](int i) {
            const double d = spread(37)(i);
            return d == 0 ? 3 : d;
          },
          512)};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
ENTRY %main (a: s32[512,128], b: s32[512,128]) -> (s32[512,128], s32[512,128]) {
  %a = s32[512,128]{1,0} parameter(0)
  %b = s32[512,128]{1,0} parameter(1)
  %div = s32[512,128]{1,0} divide(%a, %b)
  %rem = s32[512,128]{1,0} remainder(%a, %b)
  ROOT %t = (s32[512,128], s32[512,128]) tuple(%div, %rem)
})",
                                  args),
                 args);
}

// Ragged sizes and a broadcast row take the tiled kernel, whose bodies may be long as long as
// their values fit its registers (v6..v19): sine of a product with a broadcast row, plus an
// s32 value converted (46 ops).
TEST(ExactElementwise, LongBodiesOnTheTiledKernel) {
  testing::ExpectMatch(R"(HloModule m, replica_count=8
%f (x: f32[20,130], row: f32[130], n: s32[20,130]) -> f32[20,130] {
  %x = f32[20,130]{1,0} parameter(0)
  %row = f32[130]{0} parameter(1)
  %n = s32[20,130]{1,0} parameter(2)
  %b = f32[20,130]{1,0} broadcast(%row), dimensions={1}
  %y = f32[20,130]{1,0} multiply(%x, %b)
  %s = f32[20,130]{1,0} sine(%y)
  %qf = f32[20,130]{1,0} convert(%n)
  ROOT %r = f32[20,130]{1,0} add(%s, %qf)
}
ENTRY %main (x: f32[20,130], row: f32[130], n: s32[20,130]) -> f32[20,130] {
  %x = f32[20,130]{1,0} parameter(0)
  %row = f32[130]{0} parameter(1)
  %n = s32[20,130]{1,0} parameter(2)
  ROOT %r = f32[20,130]{1,0} fusion(%x, %row, %n), kind=kLoop, calls=%f
})",
                       1e-6);
}

// Found by scripts/difftest.py (seed 69, minimized): a clamp on its own (no fusion) whose
// bounds are scalar constants splatted them from an HBM buffer constants do not have, and
// clamped to whatever lay there (error 1.0 of the largest value). They are immediates now.
TEST(ExactElementwise, ClampByScalarConstantsOutsideAFusion) {
  testing::ExpectMatch(R"(HloModule difftest_69
ENTRY main {
  x = f32[8,8,128] parameter(0)
  lo = f32[] constant(-0.5)
  hi = f32[] constant(0.75)
  ROOT c = f32[8,8,128] clamp(lo, x, hi)
}
)");
}

}  // namespace
}  // namespace tpusim
