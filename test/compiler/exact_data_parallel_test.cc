// Kernels under a data-parallel split of a single-replica module (data_parallel.h), simulated
// on v3-8 and compared with the evaluator: batch-norm training whose statistics cover the
// whole batch (each core's sums all-reduced between its two kernels), and a bf16 -> f32
// convert on each core's share.
#include <gtest/gtest.h>

#include "test/compiler/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;

// x: 16 images split 2 per core (72 rows of 128 features each); y, mean and variance.
constexpr const char* kSplitTraining = R"(HloModule m
ENTRY %main (g: f32[128], b: f32[128], x: f32[16,6,6,128]) -> (f32[16,6,6,128], f32[128], f32[128]) {
  %g = f32[128]{0} parameter(0)
  %b = f32[128]{0} parameter(1)
  %x = f32[16,6,6,128]{3,2,1,0} parameter(2)
  %bn = (f32[16,6,6,128]{3,2,1,0}, f32[128]{0}, f32[128]{0}) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[16,6,6,128]{3,2,1,0} get-tuple-element(%bn), index=0
  %mean = f32[128]{0} get-tuple-element(%bn), index=1
  %var = f32[128]{0} get-tuple-element(%bn), index=2
  ROOT %t = (f32[16,6,6,128]{3,2,1,0}, f32[128]{0}, f32[128]{0}) tuple(%y, %mean, %var)
})";

TEST(DataParallel, BatchNormTrainingStatisticsCoverTheWholeBatch) { ExpectMatch(kSplitTraining); }

TEST(DataParallel, SplitBatchNormCorruptionIsDetected) {
  testing::ValueRun r = testing::SimulateValues(kSplitTraining, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// 2,048 features (a two-vreg period, no fold), statistics nothing reads, bf16 input.
TEST(DataParallel, BatchNormTrainingOfWideFeaturesWithUnreadStatistics) {
  ExpectMatch(R"(HloModule m
ENTRY %main (g: f32[2048], b: f32[2048], x: bf16[8,3,4,2048]) -> f32[8,3,4,2048] {
  %g = f32[2048]{0} parameter(0)
  %b = f32[2048]{0} parameter(1)
  %x = bf16[8,3,4,2048]{3,2,1,0} parameter(2)
  %xf = f32[8,3,4,2048]{3,2,1,0} convert(%x)
  %bn = (f32[8,3,4,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}) batch-norm-training(%xf, %g, %b), epsilon=0.001, feature_index=3
  ROOT %y = f32[8,3,4,2048]{3,2,1,0} get-tuple-element(%bn), index=0
})");
}

}  // namespace
}  // namespace tpusim
