// Reduces over the last dimension with reducers other than add and max, on the line-reduce
// kernel (compiler/lowering/reduce/line_reduce_kernel.h): jnp.argmax and argmin (a value and an
// iota index folded together, ties to the lower index, NaN winning as XLA's reducer says),
// minimum, product and bitwise or, over 1,030 lines (two groups of lanes) of 520 columns
// (two chunks), each element against the evaluator's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test/compiler/values/elementwise_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectBitExact;
using testing::RunWithArguments;
using testing::Unit;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The reducers the modules share: jnp.argmax's (the larger value, NaN first, ties to the
// lower index), a sum and a logical and.
constexpr const char* kArgmax =
    R"(%argmax (a0: f32[], a1: s32[], b0: f32[], b1: s32[]) -> (f32[], s32[]) {
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
)";
constexpr const char* kAdd = R"(%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
)";
constexpr const char* kAnd = R"(%and (a: pred[], b: pred[]) -> pred[] {
  %a = pred[] parameter(0)
  %b = pred[] parameter(1)
  ROOT %r = pred[] and(%a, %b)
}
)";

// A [rows, 520] argument of `type`, element i being f(i).
template <typename F>
eval::Value Lines(hlo::PrimitiveType type, F f, int64_t rows = 1030) {
  std::vector<double> v;
  for (int64_t i = 0; i < rows * 520; ++i) v.push_back(f(static_cast<int>(i)));
  return eval::Value::FromVector(type, {rows, 520}, v);
}

// Values with many ties (small integers), a NaN in some lines, and both signs of zero.
eval::Value Logits(uint32_t salt, int64_t rows = 1030) {
  return Lines(
      hlo::PrimitiveType::kF32,
      [salt](int i) {
        if (i % 977 == 5) return kNaN;
        if (i % 631 == 7) return -0.0;
        return std::floor(Unit(i, salt) * 9) - 4;
      },
      rows);
}

TEST(ExactLineReduce, ArgmaxAndArgminWithTiesAndNaN) {
  const std::vector<eval::Value> args = {Logits(91)};
  ExpectBitExact(RunWithArguments(std::string(R"(HloModule m, replica_count=8
)") + kArgmax + R"(%argmin (a0: f32[], a1: s32[], b0: f32[], b1: s32[]) -> (f32[], s32[]) {
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

// What the fusion pass makes of a step's checks (pre-optimization HLO): jmp's
// all(isfinite(x * y)) over the whole, x holding NaN (a pred result, no predicate stored),
// and min(|x|) per line; the producers run inside the reduce's trip.
TEST(ExactLineReduce, ProducersFusedIntoAllFiniteAndMin) {
  const std::vector<eval::Value> args = {
      Logits(101, 40), Lines(
                           hlo::PrimitiveType::kF32, [](int i) { return Unit(i, 103) - 0.5; }, 40)};
  ExpectBitExact(RunWithArguments(std::string(R"(HloModule m, replica_count=8
)") + kAnd + R"(%min (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] minimum(%a, %b)
}
ENTRY %main (x: f32[40,520], y: f32[40,520]) -> (pred[], pred[], f32[40]) {
  %x = f32[40,520]{1,0} parameter(0)
  %y = f32[40,520]{1,0} parameter(1)
  %p = f32[40,520]{1,0} multiply(%x, %y)
  %f = pred[40,520]{1,0} is-finite(%p)
  %t = pred[] constant(true)
  %x_ok = pred[] reduce(%f, %t), dimensions={0,1}, to_apply=%and
  %fy = pred[40,520]{1,0} is-finite(%y)
  %y_ok = pred[] reduce(%fy, %t), dimensions={0,1}, to_apply=%and
  %a = f32[40,520]{1,0} abs(%x)
  %inf = f32[] constant(inf)
  %mn = f32[40]{0} reduce(%a, %inf), dimensions={1}, to_apply=%min
  ROOT %r = (pred[], pred[], f32[40]) tuple(%x_ok, %y_ok, %mn)
})",
                                  args),
                 args);
}

// XLA's kInput fusions as an optimized dump holds them: a softmax denominator (the row
// maximum broadcast along the columns: one vreg per group of lines), an argmax with its
// iota inside, and jmp's all-finite check over the reshaped whole (a pred result; x holds a
// NaN, y does not); 40 lines of 520 (two chunks), and the whole as one line of 20,800.
TEST(ExactLineReduce, FusedReductionsOfAnOptimizedDump) {
  const std::vector<eval::Value> args = {
      Logits(97, 40),
      Lines(
          hlo::PrimitiveType::kF32, [](int i) { return Unit(i, 99) * 4 - 2; }, 40),
      eval::Value::FromVector(hlo::PrimitiveType::kF32, {40}, std::vector<double>(40, 4.0))};
  ExpectBitExact(RunWithArguments(std::string(R"(HloModule m, replica_count=8
)") + kAdd + kAnd + kArgmax + R"(%softmax_sum (p0: f32[40,520], p1: f32[40]) -> f32[40] {
  %p0 = f32[40,520]{1,0} parameter(0)
  %p1 = f32[40]{0} parameter(1)
  %b = f32[40,520]{1,0} broadcast(%p1), dimensions={0}
  %d = f32[40,520]{1,0} subtract(%p0, %b)
  %e = f32[40,520]{1,0} exponential(%d)
  %z = f32[] constant(0)
  ROOT %r = f32[40]{0} reduce(%e, %z), dimensions={1}, to_apply=%add
}
%fused_argmax (p0: f32[40,520]) -> (f32[40], s32[40]) {
  %p0 = f32[40,520]{1,0} parameter(0)
  %iota = s32[40,520]{1,0} iota(), iota_dimension=1
  %ninf = f32[] constant(-inf)
  %zero = s32[] constant(0)
  ROOT %r = (f32[40], s32[40]) reduce(%p0, %iota, %ninf, %zero), dimensions={1}, to_apply=%argmax
}
%all_finite (p0: f32[40,520]) -> pred[] {
  %p0 = f32[40,520]{1,0} parameter(0)
  %f = pred[40,520]{1,0} is-finite(%p0)
  %flat = pred[20800]{0} reshape(%f)
  %t = pred[] constant(true)
  ROOT %all = pred[] reduce(%flat, %t), dimensions={0}, to_apply=%and
}
ENTRY %main (x: f32[40,520], y: f32[40,520], m: f32[40]) -> (f32[40], s32[40], pred[], pred[]) {
  %x = f32[40,520]{1,0} parameter(0)
  %y = f32[40,520]{1,0} parameter(1)
  %m = f32[40]{0} parameter(2)
  %sum = f32[40]{0} fusion(%y, %m), kind=kInput, calls=%softmax_sum
  %am = (f32[40], s32[40]) fusion(%x), kind=kInput, calls=%fused_argmax
  %idx = s32[40]{0} get-tuple-element(%am), index=1
  %x_ok = pred[] fusion(%x), kind=kInput, calls=%all_finite
  %y_ok = pred[] fusion(%y), kind=kInput, calls=%all_finite
  ROOT %t = (f32[40], s32[40], pred[], pred[]) tuple(%sum, %idx, %x_ok, %y_ok)
})",
                                  args),
                 args);
}

}  // namespace
}  // namespace tpusim
