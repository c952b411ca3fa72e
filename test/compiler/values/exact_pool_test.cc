// Max pooling (reduce-window, pool_kernel.h) with values: windows with padding on either
// side, ragged features, odd spatial sizes and several images per core, compared with the
// evaluator on v3-8.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::SimulateValues;

// ResNet-50's pool (3x3, stride 2, padding 0_1) on 3 images of 10x11 pixels with 96
// features, padded 1_1 in the columns: taps clamp at the top-left and bottom-right.
constexpr const char* kPaddedPool = R"(HloModule m, replica_count=8
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[3,10,11,96]) -> f32[3,5,6,96] {
  %x = f32[3,10,11,96]{3,2,1,0} parameter(0)
  %init = f32[] constant(-inf)
  ROOT %p = f32[3,5,6,96]{3,2,1,0} reduce-window(%x, %init), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x1_1x0_0}, to_apply=%max
})";

TEST(ExactPool, MaxPoolWithPaddingOnBothSides) { ExpectMatch(kPaddedPool, 1e-12); }

TEST(ExactPool, CorruptedResultIsDetected) {
  testing::ValueRun r = SimulateValues(kPaddedPool, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// The shape of ResNet-50's pool at 32x32 pixels, 4 images (a loop over images, two chunks
// of lines each), and a 2x2 stride-2 pool with an init of 0.5 beside it.
TEST(ExactPool, ResNetPoolOverAnImageLoop) {
  ExpectMatch(R"(HloModule m, replica_count=8
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[4,32,32,64], z: f32[2,9,8,128]) -> (f32[4,16,16,64], f32[2,4,4,128]) {
  %x = f32[4,32,32,64]{3,2,1,0} parameter(0)
  %z = f32[2,9,8,128]{3,2,1,0} parameter(1)
  %init = f32[] constant(-inf)
  %half = f32[] constant(0.5)
  %p = f32[4,16,16,64]{3,2,1,0} reduce-window(%x, %init), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0}, to_apply=%max
  %q = f32[2,4,4,128]{3,2,1,0} reduce-window(%z, %half), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=%max
  ROOT %t = (f32[4,16,16,64]{3,2,1,0}, f32[2,4,4,128]{3,2,1,0}) tuple(%p, %q)
})",
              1e-12);
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

// Windows over the last dimensions of arrays of rank 1 to 3 (difftest's most frequent
// timing-only kernel): the windowed dimensions are the kernel's h and w, those before them
// its images and those after its features, multiplied out. A rank-1 window over one
// "image" with an odd number of chunks needs no second image to alternate buffers with.
TEST(ExactPool, WindowsOverTheLastDimensionsOfAnyRank) {
  testing::ExpectMatch(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[2,128,8] parameter(0)
  v = f32[130] parameter(1)
  q = f32[5,24] parameter(2)
  z = f32[] constant(0)
  lo = f32[] constant(-inf)
  r3 = f32[2,126,8] reduce-window(x, z), window={size=1x3x1 stride=1x1x1 pad=0_0x0_0x0_0}, to_apply=add
  r1 = f32[65] reduce-window(v, lo), window={size=3 stride=2 pad=1_1}, to_apply=max
  r2 = f32[3,12] reduce-window(q, z), window={size=3x2 stride=1x2 pad=0_0x0_0}, to_apply=add
  ROOT t = (f32[2,126,8], f32[65], f32[3,12]) tuple(r3, r1, r2)
})",
                       1e-6);
}

}  // namespace
}  // namespace tpusim
