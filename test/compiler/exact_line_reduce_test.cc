// Reduces over the last dimension with reducers other than add and max, on the line-reduce
// kernel (compiler/lowering/line_reduce_kernel.h): jnp.argmax and argmin (a value and an
// iota index folded together, ties to the lower index, NaN winning as XLA's reducer says),
// minimum, product and bitwise or, over 1,030 lines (two groups of lanes) of 520 columns
// (two chunks), each element against the evaluator's.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test/compiler/elementwise_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectBitExact;
using testing::RunWithArguments;
using testing::Unit;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A [1030, 520] argument of `type`, element i being f(i).
template <typename F>
eval::Value Lines(hlo::PrimitiveType type, F f) {
  std::vector<double> v;
  for (int i = 0; i < 1030 * 520; ++i) v.push_back(f(i));
  return eval::Value::FromVector(type, {1030, 520}, v);
}

// Values with many ties (small integers), a NaN in some lines, and both signs of zero.
eval::Value Logits(uint32_t salt) {
  return Lines(hlo::PrimitiveType::kF32, [salt](int i) {
    if (i % 977 == 5) return kNaN;
    if (i % 631 == 7) return -0.0;
    return std::floor(Unit(i, salt) * 9) - 4;
  });
}

TEST(ExactLineReduce, ArgmaxAndArgminWithTiesAndNaN) {
  const std::vector<eval::Value> args = {Logits(91)};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
%argmax (a0: f32[], a1: s32[], b0: f32[], b1: s32[]) -> (f32[], s32[]) {
  %a0 = f32[] parameter(0)
  %a1 = s32[] parameter(1)
  %b0 = f32[] parameter(2)
  %b1 = s32[] parameter(3)
  %gt = pred[] compare(%a0, %b0), direction=GT
  %nan = pred[] compare(%a0, %a0), direction=NE
  %or = pred[] or(%gt, %nan)
  %eq = pred[] compare(%a0, %b0), direction=EQ
  %lt = pred[] compare(%a1, %b1), direction=LT
  %and = pred[] and(%eq, %lt)
  %pick = pred[] or(%or, %and)
  %v = f32[] select(%pick, %a0, %b0)
  %i = s32[] select(%pick, %a1, %b1)
  ROOT %t = (f32[], s32[]) tuple(%v, %i)
}
%argmin (a0: f32[], a1: s32[], b0: f32[], b1: s32[]) -> (f32[], s32[]) {
  %a0 = f32[] parameter(0)
  %a1 = s32[] parameter(1)
  %b0 = f32[] parameter(2)
  %b1 = s32[] parameter(3)
  %lt = pred[] compare(%a0, %b0), direction=LT
  %eq = pred[] compare(%a0, %b0), direction=EQ
  %ilt = pred[] compare(%a1, %b1), direction=LT
  %tie = pred[] and(%eq, %ilt)
  %pick = pred[] or(%lt, %tie)
  %v = f32[] select(%pick, %a0, %b0)
  %i = s32[] select(%pick, %a1, %b1)
  ROOT %t = (f32[], s32[]) tuple(%v, %i)
}
ENTRY %main (x: f32[1030,520]) -> (s32[1030], f32[1030], s32[1030]) {
  %x = f32[1030,520]{1,0} parameter(0)
  %iota = s32[1030,520]{1,0} iota(), iota_dimension=1
  %ninf = f32[] constant(-inf)
  %inf = f32[] constant(inf)
  %zero = s32[] constant(0)
  %mx = (f32[1030], s32[1030]) reduce(%x, %iota, %ninf, %zero), dimensions={1}, to_apply=%argmax
  %mn = (f32[1030], s32[1030]) reduce(%x, %iota, %inf, %zero), dimensions={1}, to_apply=%argmin
  %imax = s32[1030]{0} get-tuple-element(%mx), index=1
  %vmin = f32[1030]{0} get-tuple-element(%mn), index=0
  %imin = s32[1030]{0} get-tuple-element(%mn), index=1
  ROOT %r = (s32[1030], f32[1030], s32[1030]) tuple(%imax, %vmin, %imin)
})",
                                  args),
                 args);
}

TEST(ExactLineReduce, MinimumProductAndBitwiseOr) {
  const std::vector<eval::Value> args = {
      Logits(93), Lines(hlo::PrimitiveType::kF32, [](int i) { return 0.9 + Unit(i, 95) * 0.2; }),
      Lines(hlo::PrimitiveType::kS32,
            [](int i) { return static_cast<double>(1 << (i % 31)) * (i % 7 == 0); })};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
%min (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] minimum(%a, %b)
}
%mul (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] multiply(%a, %b)
}
%or (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %o = s32[] or(%a, %b)
}
ENTRY %main (x: f32[1030,520], y: f32[1030,520], z: s32[1030,520]) -> (f32[1030], f32[1030], s32[1030]) {
  %x = f32[1030,520]{1,0} parameter(0)
  %y = f32[1030,520]{1,0} parameter(1)
  %z = s32[1030,520]{1,0} parameter(2)
  %inf = f32[] constant(inf)
  %one = f32[] constant(1)
  %zero = s32[] constant(0)
  %mn = f32[1030]{0} reduce(%x, %inf), dimensions={1}, to_apply=%min
  %pr = f32[1030]{0} reduce(%y, %one), dimensions={1}, to_apply=%mul
  %bits = s32[1030]{0} reduce(%z, %zero), dimensions={1}, to_apply=%or
  ROOT %r = (f32[1030], f32[1030], s32[1030]) tuple(%mn, %pr, %bits)
})",
                                  args),
                 args);
}

}  // namespace
}  // namespace tpusim
