// The gradient of max pooling (select-and-scatter, pool_grad_kernel.h) with values:
// overlapping windows with padding, ties (the first maximum in window order takes the
// source), odd sizes and non-overlapping windows, compared with the evaluator on v3-8.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::SimulateValues;

// ResNet-50's pool gradient (3x3, stride 2, padding 0_1) on 2 images of 10x12 pixels;
// max(x, 0.5) makes most windows ties.
constexpr const char* kTies = R"(HloModule m, replica_count=8
%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = pred[] compare(%a, %b), direction=GE
}
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
ENTRY %main (x: f32[2,10,12,64], s: f32[2,5,6,64]) -> (f32[2,10,12,64], f32[2,10,12,64]) {
  %x = f32[2,10,12,64]{3,2,1,0} parameter(0)
  %s = f32[2,5,6,64]{3,2,1,0} parameter(1)
  %half = f32[] constant(0.5)
  %halves = f32[2,10,12,64]{3,2,1,0} broadcast(%half), dimensions={}
  %t = f32[2,10,12,64]{3,2,1,0} maximum(%x, %halves)
  %zero = f32[] constant(0)
  %g = f32[2,10,12,64]{3,2,1,0} select-and-scatter(%x, %s, %zero), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0}, select=%ge, scatter=%sum
  %gt = f32[2,10,12,64]{3,2,1,0} select-and-scatter(%t, %s, %zero), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0}, select=%ge, scatter=%sum
  ROOT %r = (f32[2,10,12,64]{3,2,1,0}, f32[2,10,12,64]{3,2,1,0}) tuple(%g, %gt)
})";

TEST(ExactPoolGrad, OverlappingWindowsWithTies) { ExpectMatch(kTies); }

TEST(ExactPoolGrad, CorruptedResultIsDetected) {
  testing::ValueRun r = SimulateValues(kTies, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// 3 images of 9x9 pixels, 128 features, padding 0_2 (a chunk of lines is not the whole
// image: two chunks, the second with the halo line of the first), an init of 1, and 2x2
// stride-2 windows that do not overlap.
TEST(ExactPoolGrad, OddSizesAndNonOverlappingWindows) {
  ExpectMatch(R"(HloModule m, replica_count=8
%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = pred[] compare(%a, %b), direction=GE
}
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
ENTRY %main (x: f32[3,9,9,128], s: f32[3,5,5,128], y: f32[2,8,8,64], u: f32[2,4,4,64]) -> (f32[3,9,9,128], f32[2,8,8,64]) {
  %x = f32[3,9,9,128]{3,2,1,0} parameter(0)
  %s = f32[3,5,5,128]{3,2,1,0} parameter(1)
  %y = f32[2,8,8,64]{3,2,1,0} parameter(2)
  %u = f32[2,4,4,64]{3,2,1,0} parameter(3)
  %one = f32[] constant(1)
  %zero = f32[] constant(0)
  %g = f32[3,9,9,128]{3,2,1,0} select-and-scatter(%x, %s, %one), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_2x0_2x0_0}, select=%ge, scatter=%sum
  %h = f32[2,8,8,64]{3,2,1,0} select-and-scatter(%y, %u, %zero), window={size=1x2x2x1 stride=1x2x2x1}, select=%ge, scatter=%sum
  ROOT %r = (f32[3,9,9,128]{3,2,1,0}, f32[2,8,8,64]{3,2,1,0}) tuple(%g, %h)
})");
}

}  // namespace
}  // namespace tpusim
