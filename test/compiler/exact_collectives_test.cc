// Collectives that compute exact values when their ring needs padding: simulated with random
// inputs and compared with the reference evaluator (sim_values_util.h).
#include <gtest/gtest.h>

#include "test/compiler/sim_values_util.h"

namespace tpusim {
namespace {

TEST(ExactCollectives, TupleAllReducePadsItsLastSegmentInVmemOnly) {
  // f32[1100,1000] is 4.4 MB: three 2 MiB ring segments, the last one 0.2 MB of data and
  // the rest padding that never reaches HBM (the neighbouring buffer %c would be overwritten).
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}
ENTRY %main (a: f32[], b: f32[1100,1000], c: f32[10]) -> (f32[], f32[1100,1000], f32[10]) {
  %a = f32[] parameter(0)
  %b = f32[1100,1000]{1,0} parameter(1)
  %c = f32[10]{0} parameter(2)
  %ar = (f32[], f32[1100,1000], f32[10]) all-reduce(%a, %b, %c), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%sum
  %g0 = f32[] get-tuple-element(%ar), index=0
  %g1 = f32[1100,1000]{1,0} get-tuple-element(%ar), index=1
  %g2 = f32[10]{0} get-tuple-element(%ar), index=2
  ROOT %t = (f32[], f32[1100,1000], f32[10], f32[10]) tuple(%g0, %g1, %g2, %c)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_LT(r.error, 1e-6);  // sums of 8 f32 values, in ring order
}

}  // namespace
}  // namespace tpusim
