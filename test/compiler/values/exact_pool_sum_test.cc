// Average pooling as XLA emits it (a reduce-window add, then a divide) and reduce-windows
// with min, on the pooling kernel (pool_kernel.h), compared with the evaluator on v3-8.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::SimulateValues;

// A 3x3 stride-1 SAME average pool on 3 images of 9x10 pixels with 96 features: the sum
// pads with zeros on every side, and the divisor counts each window's real pixels (a
// reduce-window add over ones, as TensorFlow's avg_pool lowers to XLA).
constexpr const char* kSamePool = R"(HloModule m, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[3,9,10,96]) -> f32[3,9,10,96] {
  %x = f32[3,9,10,96]{3,2,1,0} parameter(0)
  %zero = f32[] constant(0)
  %sum = f32[3,9,10,96]{3,2,1,0} reduce-window(%x, %zero), window={size=1x3x3x1 pad=0_0x1_1x1_1x0_0}, to_apply=%add
  %one = f32[] constant(1)
  %ones = f32[3,9,10,96]{3,2,1,0} broadcast(%one), dimensions={}
  %count = f32[3,9,10,96]{3,2,1,0} reduce-window(%ones, %zero), window={size=1x3x3x1 pad=0_0x1_1x1_1x0_0}, to_apply=%add
  ROOT %avg = f32[3,9,10,96]{3,2,1,0} divide(%sum, %count)
})";

TEST(ExactPoolSum, SameAveragePoolDividesByTheRealPixels) { ExpectMatch(kSamePool, 1e-6); }

TEST(ExactPoolSum, CorruptedResultIsDetected) {
  testing::ValueRun r = SimulateValues(kSamePool, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// A 2x2 stride-2 VALID average pool (the sum times a constant 1/4) over 4 images, each in
// two chunks of lines; a 3x2 stride-(2,3) sum with an init of 0.5 whose last column window
// lies wholly in padding (it yields the init alone, as the evaluator skips padding).
TEST(ExactPoolSum, ValidAveragePoolAndAWindowWhollyInPadding) {
  ExpectMatch(R"(HloModule m, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4,32,32,64], z: f32[2,7,6,128]) -> (f32[4,16,16,64], f32[2,4,3,128]) {
  %x = f32[4,32,32,64]{3,2,1,0} parameter(0)
  %z = f32[2,7,6,128]{3,2,1,0} parameter(1)
  %zero = f32[] constant(0)
  %half = f32[] constant(0.5)
  %sum = f32[4,16,16,64]{3,2,1,0} reduce-window(%x, %zero), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=%add
  %quarter = f32[] constant(0.25)
  %quarters = f32[4,16,16,64]{3,2,1,0} broadcast(%quarter), dimensions={}
  %avg = f32[4,16,16,64]{3,2,1,0} multiply(%sum, %quarters)
  %q = f32[2,4,3,128]{3,2,1,0} reduce-window(%z, %half), window={size=1x3x2x1 stride=1x2x3x1 pad=0_0x1_1x0_3x0_0}, to_apply=%add
  ROOT %t = (f32[4,16,16,64]{3,2,1,0}, f32[2,4,3,128]{3,2,1,0}) tuple(%avg, %q)
})",
              1e-6);
}

// Min pooling with padding on both sides: padded taps clamp to an edge pixel as for max.
TEST(ExactPoolSum, MinPoolWithPadding) {
  ExpectMatch(R"(HloModule m, replica_count=8
%min (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] minimum(%a, %b)
}
ENTRY %main (x: f32[2,8,9,200]) -> f32[2,4,5,200] {
  %x = f32[2,8,9,200]{3,2,1,0} parameter(0)
  %init = f32[] constant(inf)
  ROOT %p = f32[2,4,5,200]{3,2,1,0} reduce-window(%x, %init), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_0x1_1x0_0}, to_apply=%min
})",
              1e-12);
}

}  // namespace
}  // namespace tpusim
