// Global average pooling and its gradient with values (tile_ops.cc, grouped tiled kernel):
// a reduce over the middle dimensions of NHWC and a [N, C] value broadcast over H and W,
// compared with the evaluator on v3-8.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::SimulateValues;

// ResNet-50's head at 3 images of 7x7 pixels and 300 features (ragged column blocks, 49
// rows per image: masked tiles), the sum over H and W scaled by 1/49, and the gradient's
// select of the broadcast [N, C] where the activation is positive.
constexpr const char* kAveragePool = R"(HloModule m, replica_count=8
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%grad (p0: f32[], p1: f32[3,300], p2: f32[3,7,7,300], p3: f32[]) -> f32[3,7,7,300] {
  %p0 = f32[] parameter(0)
  %p1 = f32[3,300]{1,0} parameter(1)
  %p2 = f32[3,7,7,300]{3,2,1,0} parameter(2)
  %p3 = f32[] parameter(3)
  %zero = f32[3,7,7,300]{3,2,1,0} broadcast(%p0), dimensions={}
  %dy = f32[3,7,7,300]{3,2,1,0} broadcast(%p1), dimensions={0,3}
  %positive = pred[3,7,7,300]{3,2,1,0} compare(%p2, %zero), direction=GT
  %none = f32[3,7,7,300]{3,2,1,0} broadcast(%p3), dimensions={}
  ROOT %g = f32[3,7,7,300]{3,2,1,0} select(%positive, %dy, %none)
}
ENTRY %main (x: f32[3,7,7,300], dy: f32[3,300]) -> (f32[3,300], f32[3,7,7,300]) {
  %x = f32[3,7,7,300]{3,2,1,0} parameter(0)
  %dy = f32[3,300]{1,0} parameter(1)
  %init = f32[] constant(0)
  %r = f32[3,300]{1,0} reduce(%x, %init), dimensions={1,2}, to_apply=%sum
  %scale = f32[] constant(0.020408163)
  %scales = f32[3,300]{1,0} broadcast(%scale), dimensions={}
  %mean = f32[3,300]{1,0} multiply(%r, %scales)
  %zero = f32[] constant(0)
  %g = f32[3,7,7,300]{3,2,1,0} fusion(%zero, %dy, %x, %zero), kind=kLoop, calls=%grad
  ROOT %t = (f32[3,300]{1,0}, f32[3,7,7,300]{3,2,1,0}) tuple(%mean, %g)
})";

TEST(ExactAveragePool, SumOverHeightAndWidthAndItsGradient) { ExpectMatch(kAveragePool, 1e-6); }

TEST(ExactAveragePool, CorruptedResultIsDetected) {
  testing::ValueRun r = SimulateValues(kAveragePool, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// A reduce over the middle dimension of a rank-3 value with max, and over two middle
// dimensions with trailing kept dimensions flattened into the columns.
TEST(ExactAveragePool, MiddleReductionsWithMaxAndSeveralTrailingDimensions) {
  ExpectMatch(R"(HloModule m, replica_count=8
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[5,1100,40], y: f32[2,3,9,4,70]) -> (f32[5,40], f32[2,4,70]) {
  %x = f32[5,1100,40]{2,1,0} parameter(0)
  %y = f32[2,3,9,4,70]{4,3,2,1,0} parameter(1)
  %low = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %m = f32[5,40]{1,0} reduce(%x, %low), dimensions={1}, to_apply=%max
  %s = f32[2,4,70]{2,1,0} reduce(%y, %zero), dimensions={1,2}, to_apply=%sum
  ROOT %t = (f32[5,40]{1,0}, f32[2,4,70]{2,1,0}) tuple(%m, %s)
})",
              1e-6);
}

}  // namespace
// Whole column blocks: each tile moves several blocks as planes of one DMA (tile_kernel.cc,
// WideBlocks). ResNet-50's head at 512 features (7 vregs of 49 masked rows, 4 blocks a
// tile), 200 rows of 768 columns with max (25 vregs: 3 of the 6 blocks a tile), and 1,100
// rows (more than a tile: one block at a time).
TEST(ExactAveragePool, ReductionsOfSeveralColumnBlocksPerTile) {
  ExpectMatch(R"(HloModule m, replica_count=8
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[3,7,7,512], y: f32[2,25,8,768], z: f32[2,1100,256]) -> (f32[3,512], f32[2,768], f32[2,256]) {
  %x = f32[3,7,7,512]{3,2,1,0} parameter(0)
  %y = f32[2,25,8,768]{3,2,1,0} parameter(1)
  %z = f32[2,1100,256]{2,1,0} parameter(2)
  %zero = f32[] constant(0)
  %low = f32[] constant(-inf)
  %s = f32[3,512]{1,0} reduce(%x, %zero), dimensions={1,2}, to_apply=%sum
  %m = f32[2,768]{1,0} reduce(%y, %low), dimensions={1,2}, to_apply=%max
  %l = f32[2,256]{1,0} reduce(%z, %zero), dimensions={1}, to_apply=%sum
  ROOT %t = (f32[3,512]{1,0}, f32[2,768]{1,0}, f32[2,256]{1,0}) tuple(%s, %m, %l)
})",
              1e-5);  // sums of up to 1,100 terms in the kernel's order
}

}  // namespace tpusim
