// VPU kernels with values at sizes beyond one unrolled tile list: scalar operands of the
// streaming kernel, looped tiles, s32 arithmetic and power. Each module is compiled for
// v3-8, simulated with random inputs and compared with the evaluator (sim_values_util.h).
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::SimulateValues;

using testing::ExpectMatch;

// An Adam-style update over 320 vregs (two full chunks and a partial one) whose step size
// is a scalar operand: the stream splats it into a vreg once.
constexpr const char* kScalarInStream = R"(HloModule m, replica_count=8
%update (p0: f32[], p1: f32[1280,256], p2: f32[], p3: f32[1280,256]) -> f32[1280,256] {
  %p0 = f32[] parameter(0)
  %p1 = f32[1280,256]{1,0} parameter(1)
  %p2 = f32[] parameter(2)
  %p3 = f32[1280,256]{1,0} parameter(3)
  %b0 = f32[1280,256]{1,0} broadcast(%p0), dimensions={}
  %b2 = f32[1280,256]{1,0} broadcast(%p2), dimensions={}
  %m = f32[1280,256]{1,0} multiply(%p1, %b0)
  %a = f32[1280,256]{1,0} add(%m, %b2)
  ROOT %s = f32[1280,256]{1,0} subtract(%p3, %a)
}
ENTRY %main (s: f32[], g: f32[1280,256], w: f32[1280,256]) -> f32[1280,256] {
  %s = f32[] parameter(0)
  %g = f32[1280,256]{1,0} parameter(1)
  %w = f32[1280,256]{1,0} parameter(2)
  %eps = f32[] constant(0.25)
  ROOT %f = f32[1280,256]{1,0} fusion(%s, %g, %eps, %w), kind=kLoop, calls=%update
})";

TEST(ExactVpuKernels, ScalarOperandSplatInAStream) { ExpectMatch(kScalarInStream); }

TEST(ExactVpuKernels, CorruptedStreamResultIsDetected) {
  testing::ValueRun r = SimulateValues(kScalarInStream, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// Column sums of a [14400,256]-like matrix as in mnist-cnn's bias gradients (reduce over
// {0,1,2}), at [6000,256] (12 row tiles of 512, the last ragged; the middle ones a loop), with row
// sums and a max over everything of a ragged [1100,300] beside them.
TEST(ExactVpuKernels, LoopedReductionsOverManyTiles) {
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
ENTRY %main (a: f32[10,24,25,256], b: f32[1100,300]) -> (f32[256], f32[1100], f32[]) {
  %a = f32[10,24,25,256]{3,2,1,0} parameter(0)
  %b = f32[1100,300]{1,0} parameter(1)
  %zero = f32[] constant(0)
  %low = f32[] constant(-inf)
  %cols = f32[256]{0} reduce(%a, %zero), dimensions={0,1,2}, to_apply=%sum
  %rows = f32[1100]{0} reduce(%b, %zero), dimensions={1}, to_apply=%sum
  %all = f32[] reduce(%b, %low), dimensions={0,1}, to_apply=%max
  ROOT %t = (f32[256], f32[1100], f32[]) tuple(%cols, %rows, %all)
})");
}

// A ragged [2600,100] result (6 tiles of 512 rows) with row, column and scalar broadcasts: the
// interior tiles run as a loop, the edges written out.
TEST(ExactVpuKernels, LoopedTilesWithBroadcastOperands) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (a: f32[2600,100], r: f32[100], c: f32[2600], s: f32[]) -> f32[2600,100] {
  %a = f32[2600,100]{1,0} parameter(0)
  %r = f32[100]{0} parameter(1)
  %c = f32[2600]{0} parameter(2)
  %s = f32[] parameter(3)
  %br = f32[2600,100]{1,0} broadcast(%r), dimensions={1}
  %bc = f32[2600,100]{1,0} broadcast(%c), dimensions={0}
  %bs = f32[2600,100]{1,0} broadcast(%s), dimensions={}
  %add = f32[2600,100]{1,0} add(%a, %br)
  %mul = f32[2600,100]{1,0} multiply(%add, %bc)
  ROOT %sub = f32[2600,100]{1,0} subtract(%mul, %bs)
})");
}

TEST(ExactVpuKernels, CorruptedLoopedReductionIsDetected) {
  testing::ValueRun r = SimulateValues(R"(HloModule m, replica_count=8
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}
ENTRY %main (a: f32[6000,256]) -> f32[256] {
  %a = f32[6000,256]{1,0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %cols = f32[256]{0} reduce(%a, %zero), dimensions={0}, to_apply=%sum
})",
                                       /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

TEST(ExactVpuKernels, S32AddSubtractAndConvertToF32) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (step: s32[], a: s32[20,130], b: s32[20,130]) -> (f32[], s32[], f32[20,130]) {
  %step = s32[] parameter(0)
  %a = s32[20,130]{1,0} parameter(1)
  %b = s32[20,130]{1,0} parameter(2)
  %one = s32[] constant(1)
  %next = s32[] add(%step, %one)
  %t = f32[] convert(%next)
  %big = s32[] constant(-2147483647)
  %low = s32[] subtract(%big, %next)
  %d = s32[20,130]{1,0} subtract(%a, %b)
  %k = s32[] constant(16777217)
  %bk = s32[20,130]{1,0} broadcast(%k), dimensions={}
  %e = s32[20,130]{1,0} add(%d, %bk)
  %f = f32[20,130]{1,0} convert(%e)
  ROOT %r = (f32[], s32[], f32[20,130]) tuple(%t, %low, %f)
})");
}

// An s32 result is read back as an integer: Adam's step counter, small and exact (read as
// f32 bits it would be a denormal, and the check would fail).
TEST(ExactVpuKernels, S32ResultsAreComparedAsIntegers) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (step: s32[]) -> s32[] {
  %step = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %next = s32[] add(%step, %one)
})",
              /*tolerance=*/1e-12);
}

// Adam's bias correction: lr * sqrt(1 - beta2^t) / (1 - beta1^t) with t = step + 1. The
// powers have constant bases, so the VPU computes exp(t * log(beta)) (log folded at
// compile time), within f32 rounding of |t log beta| ulps of the evaluator's powf.
TEST(ExactVpuKernels, PowerWithAConstantBaseAsInAdamsBiasCorrection) {
  ExpectMatch(R"(HloModule m, replica_count=8
%correction (p0: f32[], p1: f32[], p2: f32[], p3: f32[], p4: f32[]) -> f32[] {
  %p0 = f32[] parameter(0)
  %p1 = f32[] parameter(1)
  %p2 = f32[] parameter(2)
  %p3 = f32[] parameter(3)
  %p4 = f32[] parameter(4)
  %pow1 = f32[] power(%p0, %p1)
  %sub1 = f32[] subtract(%p2, %pow1)
  %pow2 = f32[] power(%p3, %p1)
  %sub2 = f32[] subtract(%p2, %pow2)
  %sqrt = f32[] sqrt(%sub2)
  %div = f32[] divide(%sqrt, %sub1)
  ROOT %mul = f32[] multiply(%div, %p4)
}
%powers (q0: f32[20,130], q1: f32[20,130]) -> f32[20,130] {
  %q0 = f32[20,130]{1,0} parameter(0)
  %q1 = f32[20,130]{1,0} parameter(1)
  %two = f32[] constant(2)
  %b2 = f32[20,130]{1,0} broadcast(%two), dimensions={}
  %x = f32[20,130]{1,0} multiply(%q0, %b2)
  %p = f32[20,130]{1,0} power(%b2, %x)
  %one = f32[] constant(1)
  %b1 = f32[20,130]{1,0} broadcast(%one), dimensions={}
  %q = f32[20,130]{1,0} power(%b1, %q1)
  ROOT %s = f32[20,130]{1,0} add(%p, %q)
}
ENTRY %main (step: s32[], x: f32[20,130], y: f32[20,130]) -> (f32[], f32[20,130]) {
  %step = s32[] parameter(0)
  %x = f32[20,130]{1,0} parameter(1)
  %y = f32[20,130]{1,0} parameter(2)
  %one = s32[] constant(1)
  %next = s32[] add(%step, %one)
  %t = f32[] convert(%next)
  %beta1 = f32[] constant(0.9)
  %c1 = f32[] constant(1)
  %beta2 = f32[] constant(0.999)
  %lr = f32[] constant(0.001)
  %c = f32[] fusion(%beta1, %t, %c1, %beta2, %lr), kind=kLoop, calls=%correction
  %p = f32[20,130]{1,0} fusion(%x, %y), kind=kLoop, calls=%powers
  ROOT %r = (f32[], f32[20,130]) tuple(%c, %p)
})");
}

}  // namespace
}  // namespace tpusim
