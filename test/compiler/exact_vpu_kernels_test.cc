// VPU kernels with values at sizes beyond one unrolled tile list: scalar operands of the
// streaming kernel, looped tiles, s32 arithmetic and power. Each module is compiled for
// v3-8, simulated with random inputs and compared with the evaluator (sim_values_util.h).
#include <gtest/gtest.h>

#include "test/compiler/sim_values_util.h"

namespace tpusim {
namespace {

using testing::SimulateValues;

constexpr double kTolerance = 1e-5;  // f32 rounding

void ExpectMatch(const std::string& hlo, double tolerance = kTolerance) {
  testing::ValueRun r = SimulateValues(hlo);
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_GE(r.error, 0);
  EXPECT_LT(r.error, tolerance);
}

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

}  // namespace
}  // namespace tpusim
