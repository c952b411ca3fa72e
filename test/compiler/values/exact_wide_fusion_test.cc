// The tiled VPU kernel (tile_kernel.h) on fusions of more than 6 inputs: 7 full-size inputs
// as transformer-layer's Adam-like fusion.62 (1024-row tiles still fit in VMEM), and 9
// inputs mixing full, row, column and scalar operands over ragged tiles (the tiles shrink to
// 512 rows). Simulated with random inputs and compared with the reference evaluator.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;

TEST(ExactWideFusion, SevenFullSizeInputsOnTilesOf1024Rows) {
  ExpectMatch(R"(HloModule m, replica_count=8
%f (p0: f32[1100,384], p1: f32[1100,384], p2: f32[1100,384], p3: f32[1100,384], p4: f32[1100,384], p5: f32[1100,384], p6: f32[1100,384]) -> f32[1100,384] {
  %p0 = f32[1100,384]{1,0} parameter(0)
  %p1 = f32[1100,384]{1,0} parameter(1)
  %p2 = f32[1100,384]{1,0} parameter(2)
  %p3 = f32[1100,384]{1,0} parameter(3)
  %p4 = f32[1100,384]{1,0} parameter(4)
  %p5 = f32[1100,384]{1,0} parameter(5)
  %p6 = f32[1100,384]{1,0} parameter(6)
  %m0 = f32[1100,384]{1,0} multiply(%p0, %p1)
  %a0 = f32[1100,384]{1,0} add(%m0, %p2)
  %m1 = f32[1100,384]{1,0} multiply(%p3, %p4)
  %a1 = f32[1100,384]{1,0} add(%a0, %m1)
  %m2 = f32[1100,384]{1,0} multiply(%p5, %p6)
  ROOT %a2 = f32[1100,384]{1,0} subtract(%a1, %m2)
}
ENTRY %main (a: f32[1100,384], b: f32[1100,384], c: f32[1100,384], d: f32[1100,384], e: f32[1100,384], g: f32[1100,384], h: f32[1100,384]) -> f32[1100,384] {
  %a = f32[1100,384]{1,0} parameter(0)
  %b = f32[1100,384]{1,0} parameter(1)
  %c = f32[1100,384]{1,0} parameter(2)
  %d = f32[1100,384]{1,0} parameter(3)
  %e = f32[1100,384]{1,0} parameter(4)
  %g = f32[1100,384]{1,0} parameter(5)
  %h = f32[1100,384]{1,0} parameter(6)
  ROOT %r = f32[1100,384]{1,0} fusion(%a, %b, %c, %d, %e, %g, %h), kind=kLoop, calls=%f
})");
}

TEST(ExactWideFusion, NineInputsWithRowColumnAndScalarOperandsOnSmallerTiles) {
  ExpectMatch(R"(HloModule m, replica_count=8
%f (p0: f32[1300,200], p1: f32[1300,200], p2: f32[1300,200], p3: f32[1300,200], p4: f32[1300,200], p5: f32[200], p6: f32[1300], p7: f32[], p8: f32[1300,200]) -> f32[1300,200] {
  %p0 = f32[1300,200]{1,0} parameter(0)
  %p1 = f32[1300,200]{1,0} parameter(1)
  %p2 = f32[1300,200]{1,0} parameter(2)
  %p3 = f32[1300,200]{1,0} parameter(3)
  %p4 = f32[1300,200]{1,0} parameter(4)
  %p5 = f32[200]{0} parameter(5)
  %p6 = f32[1300]{0} parameter(6)
  %p7 = f32[] parameter(7)
  %p8 = f32[1300,200]{1,0} parameter(8)
  %row = f32[1300,200]{1,0} broadcast(%p5), dimensions={1}
  %col = f32[1300,200]{1,0} broadcast(%p6), dimensions={0}
  %k = f32[1300,200]{1,0} broadcast(%p7), dimensions={}
  %m0 = f32[1300,200]{1,0} multiply(%p0, %p1)
  %a0 = f32[1300,200]{1,0} add(%m0, %p2)
  %m1 = f32[1300,200]{1,0} multiply(%p3, %row)
  %a1 = f32[1300,200]{1,0} add(%a0, %m1)
  %m2 = f32[1300,200]{1,0} multiply(%p4, %col)
  %a2 = f32[1300,200]{1,0} subtract(%a1, %m2)
  %m3 = f32[1300,200]{1,0} multiply(%p8, %k)
  ROOT %a3 = f32[1300,200]{1,0} add(%a2, %m3)
}
ENTRY %main (a: f32[1300,200], b: f32[1300,200], c: f32[1300,200], d: f32[1300,200], e: f32[1300,200], r: f32[200], l: f32[1300], s: f32[], g: f32[1300,200]) -> f32[1300,200] {
  %a = f32[1300,200]{1,0} parameter(0)
  %b = f32[1300,200]{1,0} parameter(1)
  %c = f32[1300,200]{1,0} parameter(2)
  %d = f32[1300,200]{1,0} parameter(3)
  %e = f32[1300,200]{1,0} parameter(4)
  %r = f32[200]{0} parameter(5)
  %l = f32[1300]{0} parameter(6)
  %s = f32[] parameter(7)
  %g = f32[1300,200]{1,0} parameter(8)
  ROOT %out = f32[1300,200]{1,0} fusion(%a, %b, %c, %d, %e, %r, %l, %s, %g), kind=kLoop, calls=%f
})");
}

}  // namespace
}  // namespace tpusim
