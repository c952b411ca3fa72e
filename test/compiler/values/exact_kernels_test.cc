// Kernels that compute exact values: each module is compiled for v3-8, simulated with
// random inputs and compared with the reference evaluator (sim_values_util.h). Shapes are
// small and deliberately not multiples of the (8, 128) tiles.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::SimulateValues;

using testing::ExpectMatch;

TEST(ExactKernels, CorruptedResultIsDetected) {  // the comparison itself is a real check
  testing::ValueRun r = SimulateValues(R"(HloModule m, replica_count=8
ENTRY %main (a: f32[20,36], b: f32[10,20]) -> f32[36,10] {
  %a = f32[20,36]{1,0} parameter(0)
  %b = f32[10,20]{1,0} parameter(1)
  ROOT %dot = f32[36,10]{1,0} dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
})",
                                       /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

TEST(ExactKernels, DotWithBothOperandsTransposedF32) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (a: f32[300,200], b: f32[260,300]) -> f32[200,260] {
  %a = f32[300,200]{1,0} parameter(0)
  %b = f32[260,300]{1,0} parameter(1)
  ROOT %dot = f32[200,260]{1,0} dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
})");
}

TEST(ExactKernels, DotBf16PaddedToTiles) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (a: bf16[20,130], b: bf16[130,10]) -> f32[20,10] {
  %a = bf16[20,130]{1,0} parameter(0)
  %b = bf16[130,10]{1,0} parameter(1)
  ROOT %dot = f32[20,10]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
}

// As XLA's optimized dumps hold them: a convolution with its bias and ReLU in one kOutput
// fusion and a dot with a bf16 convert in another (contraction-defusion inlines both).
TEST(ExactKernels, OutputFusionsOfAConvolutionAndADot) {
  ExpectMatch(R"(HloModule m, replica_count=8
%fused_conv (p0: f32[2,8,8,16], p1: f32[3,3,16,32], p2: f32[32]) -> f32[2,8,8,32] {
  %p0 = f32[2,8,8,16]{3,2,1,0} parameter(0)
  %p1 = f32[3,3,16,32]{3,2,1,0} parameter(1)
  %p2 = f32[32]{0} parameter(2)
  %c = f32[2,8,8,32]{3,2,1,0} convolution(%p0, %p1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %b = f32[2,8,8,32]{3,2,1,0} broadcast(%p2), dimensions={3}
  %s = f32[2,8,8,32]{3,2,1,0} add(%c, %b)
  %z = f32[] constant(0)
  %bz = f32[2,8,8,32]{3,2,1,0} broadcast(%z), dimensions={}
  ROOT %r = f32[2,8,8,32]{3,2,1,0} maximum(%s, %bz)
}
%fused_dot (p0: f32[128,2048], p1: bf16[32,128]) -> bf16[32,2048] {
  %p0 = f32[128,2048]{1,0} parameter(0)
  %p1 = bf16[32,128]{1,0} parameter(1)
  %w = bf16[128,2048]{1,0} convert(%p0)
  %d = f32[32,2048]{1,0} dot(%p1, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %o = bf16[32,2048]{1,0} convert(%d)
}
ENTRY %main (x: f32[2,8,8,16], k: f32[3,3,16,32], bias: f32[32], a: bf16[32,128], w: f32[128,2048]) -> (f32[2,8,8,32], bf16[32,2048]) {
  %x = f32[2,8,8,16]{3,2,1,0} parameter(0)
  %k = f32[3,3,16,32]{3,2,1,0} parameter(1)
  %bias = f32[32]{0} parameter(2)
  %a = bf16[32,128]{1,0} parameter(3)
  %w = f32[128,2048]{1,0} parameter(4)
  %conv = f32[2,8,8,32]{3,2,1,0} fusion(%x, %k, %bias), kind=kOutput, calls=%fused_conv
  %dot = bf16[32,2048]{1,0} fusion(%w, %a), kind=kOutput, calls=%fused_dot
  ROOT %t = (f32[2,8,8,32], bf16[32,2048]) tuple(%conv, %dot)
})",
              1e-2);
}

TEST(ExactKernels, ReductionsOverRowsColumnsAndAll) {
  ExpectMatch(R"(HloModule m, replica_count=8
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}
%max (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] maximum(%x, %y)
}
ENTRY %main (a: f32[20,130]) -> (f32[20], f32[130], f32[20], f32[]) {
  %a = f32[20,130]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %low = f32[] constant(-inf)
  %rows = f32[20]{0} reduce(%a, %zero), dimensions={1}, to_apply=%sum
  %cols = f32[130]{0} reduce(%a, %zero), dimensions={0}, to_apply=%sum
  %rmax = f32[20]{0} reduce(%a, %low), dimensions={1}, to_apply=%max
  %all = f32[] reduce(%a, %zero), dimensions={0,1}, to_apply=%sum
  ROOT %t = (f32[20], f32[130], f32[20], f32[]) tuple(%rows, %cols, %rmax, %all)
})");
}

TEST(ExactKernels, FusionWithRowColumnAndScalarBroadcasts) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (a: f32[20,130], r: f32[130], c: f32[20], s: f32[]) -> (f32[20,130], f32[20,130]) {
  %a = f32[20,130]{1,0} parameter(0)
  %r = f32[130]{0} parameter(1)
  %c = f32[20]{0} parameter(2)
  %s = f32[] parameter(3)
  %br = f32[20,130]{1,0} broadcast(%r), dimensions={1}
  %bc = f32[20,130]{1,0} broadcast(%c), dimensions={0}
  %bs = f32[20,130]{1,0} broadcast(%s), dimensions={}
  %add = f32[20,130]{1,0} add(%a, %br)
  %mul = f32[20,130]{1,0} multiply(%add, %bc)
  %sub = f32[20,130]{1,0} subtract(%mul, %bs)
  %e = f32[20,130]{1,0} exponential(%a)
  ROOT %t = (f32[20,130], f32[20,130]) tuple(%sub, %e)
})");
}

TEST(ExactKernels, ScalarArithmetic) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %k = f32[] constant(0.5)
  %m = f32[] multiply(%a, %b)
  ROOT %r = f32[] add(%m, %k)
})");
}

TEST(ExactKernels, TupleAllReduceRunsARingPerOperandWithoutPaddingInHbm) {
  ExpectMatch(R"(HloModule m, replica_count=8
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}
ENTRY %main (a: f32[], b: f32[20,130], c: f32[10]) -> (f32[], f32[20,130], f32[10]) {
  %a = f32[] parameter(0)
  %b = f32[20,130]{1,0} parameter(1)
  %c = f32[10]{0} parameter(2)
  %ar = (f32[], f32[20,130], f32[10]) all-reduce(%a, %b, %c), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%sum
  %g0 = f32[] get-tuple-element(%ar), index=0
  %g1 = f32[20,130]{1,0} get-tuple-element(%ar), index=1
  %g2 = f32[10]{0} get-tuple-element(%ar), index=2
  ROOT %t = (f32[], f32[20,130], f32[10]) tuple(%g0, %g1, %g2)
})");
}

TEST(ExactKernels, IotaAndS32CompareFeedingSelectsThroughAPredFusion) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (labels: s32[20], x: f32[20,10]) -> (f32[20,10], f32[20,10]) {
  %labels = s32[20]{0} parameter(0)
  %x = f32[20,10]{1,0} parameter(1)
  %iota = s32[20,10]{1,0} iota(), iota_dimension=1
  %bl = s32[20,10]{1,0} broadcast(%labels), dimensions={0}
  %eq = pred[20,10]{1,0} compare(%bl, %iota), direction=EQ
  %zero = f32[] constant(0)
  %bz = f32[20,10]{1,0} broadcast(%zero), dimensions={}
  %sel = f32[20,10]{1,0} select(%eq, %x, %bz)
  %e = f32[20,10]{1,0} exponential(%x)
  %sel2 = f32[20,10]{1,0} select(%eq, %bz, %e)
  ROOT %t = (f32[20,10], f32[20,10]) tuple(%sel, %sel2)
})");
}

TEST(ExactKernels, StreamAfterATiledMatmulWaitsForItsOwnResults) {
  // The tiled matmul leaves its output credits set; the stream's output fence must not
  // mistake them for its own (it once deadlocked here).
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (a: bf16[128,128], b: bf16[128,256]) -> f32[128,256] {
  %a = bf16[128,128]{1,0} parameter(0)
  %b = bf16[128,256]{1,0} parameter(1)
  %dot = f32[128,256]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %sq = f32[128,256]{1,0} multiply(%dot, %dot)
  ROOT %e = f32[128,256]{1,0} add(%sq, %dot)
})");
}

}  // namespace
}  // namespace tpusim
