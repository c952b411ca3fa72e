// compare's type=TOTALORDER, what JAX's sort comparators use: -NaN < -inf < ... < -0 < +0 <
// ... < +inf < +NaN. A key-value sort ascending and descending (the keys turned into s32
// total-order keys in VMEM and back, sort_kernel.cc) and an elementwise compare, against the
// evaluator: where each element lands is checked through the s32 values carried along, and
// a keys-only sort (the evaluator's two-parameter comparator path) through a select.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test/compiler/values/elementwise_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectBitExact;
using testing::RunWithArguments;
using testing::Unit;
using testing::Values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ExactTotalOrder, SortAscendingAndDescendingAndCompare) {
  const std::vector<eval::Value> args = {
      Values(
          hlo::PrimitiveType::kF32,
          {kNaN, -kNaN, -kInf, kInf, -0.0, 0.0, 0.0, -0.0, 1.0, -1.0, 1.0, kNaN, -0.0, 2.5},
          [](int i) { return i % 5 == 0 ? (i % 2 ? -0.0 : 0.0) : std::floor(Unit(i, 7) * 7) - 3; }),
      Values(hlo::PrimitiveType::kS32, {}, [](int i) { return static_cast<double>(i); }),
      Values(hlo::PrimitiveType::kF32, {-0.0, 0.0, kNaN, -kNaN, 1.0, -kInf},
             [](int i) { return i % 3 ? 0.0 : -0.0; })};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
%lt (a: f32[], b: f32[], c: s32[], d: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  ROOT %r = pred[] compare(%a, %b), direction=LT, type=TOTALORDER
}
%gt (a: f32[], b: f32[], c: s32[], d: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  ROOT %r = pred[] compare(%a, %b), direction=GT, type=TOTALORDER
}
%lt1 (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = pred[] compare(%a, %b), direction=LT, type=TOTALORDER
}
ENTRY %main (k: f32[8,128], v: s32[8,128], y: f32[8,128]) -> (f32[8,128], s32[8,128], s32[8,128], f32[8,128]) {
  %k = f32[8,128]{1,0} parameter(0)
  %v = s32[8,128]{1,0} parameter(1)
  %y = f32[8,128]{1,0} parameter(2)
  %up = (f32[8,128], s32[8,128]) sort(%k, %v), dimensions={1}, to_apply=%lt
  %down = (f32[8,128], s32[8,128]) sort(%k, %v), dimensions={1}, to_apply=%gt
  %uk = f32[8,128]{1,0} get-tuple-element(%up), index=0
  %uv = s32[8,128]{1,0} get-tuple-element(%up), index=1
  %dv = s32[8,128]{1,0} get-tuple-element(%down), index=1
  %keys = f32[8,128]{1,0} sort(%y), dimensions={1}, to_apply=%lt1
  %less = pred[8,128]{1,0} compare(%k, %keys), direction=LT, type=TOTALORDER
  %pick = f32[8,128]{1,0} select(%less, %k, %keys)
  ROOT %t = (f32[8,128], s32[8,128], s32[8,128], f32[8,128]) tuple(%uk, %uv, %dv, %pick)
})",
                                  args),
                 args);
}

}  // namespace
}  // namespace tpusim
