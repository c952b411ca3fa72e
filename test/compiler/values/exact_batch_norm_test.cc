// Batch normalization with values (batch_norm_kernel.h): training, inference and grad over
// NHWC values with the features last, at ragged sizes (features not a multiple of 128, odd
// spatial sizes, row counts that are not whole tiles) and at sizes whose passes loop over
// many tiles, on the tiled kernel and on flat streams. Each module is simulated on v3-8 and
// compared with the evaluator.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::SimulateValues;

// y, mean and variance of x[2,5,7,200]: 70 rows, a full and a ragged column tile.
constexpr const char* kTrainingRagged = R"(HloModule m, replica_count=8
ENTRY %main (x: f32[2,5,7,200], g: f32[200], b: f32[200]) -> (f32[2,5,7,200], f32[200], f32[200]) {
  %x = f32[2,5,7,200]{3,2,1,0} parameter(0)
  %g = f32[200]{0} parameter(1)
  %b = f32[200]{0} parameter(2)
  %bn = (f32[2,5,7,200]{3,2,1,0}, f32[200]{0}, f32[200]{0}) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[2,5,7,200]{3,2,1,0} get-tuple-element(%bn), index=0
  %mean = f32[200]{0} get-tuple-element(%bn), index=1
  %var = f32[200]{0} get-tuple-element(%bn), index=2
  ROOT %t = (f32[2,5,7,200]{3,2,1,0}, f32[200]{0}, f32[200]{0}) tuple(%y, %mean, %var)
})";

TEST(ExactBatchNorm, TrainingAtRaggedSizes) { ExpectMatch(kTrainingRagged); }

TEST(ExactBatchNorm, CorruptedResultIsDetected) {
  testing::ValueRun r = SimulateValues(kTrainingRagged, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// 2,600 rows of 96 features: each pass loops over six row tiles, the last one ragged.
TEST(ExactBatchNorm, TrainingOverManyTiles) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[8,25,13,96], g: f32[96], b: f32[96]) -> (f32[8,25,13,96], f32[96], f32[96]) {
  %x = f32[8,25,13,96]{3,2,1,0} parameter(0)
  %g = f32[96]{0} parameter(1)
  %b = f32[96]{0} parameter(2)
  %bn = (f32[8,25,13,96]{3,2,1,0}, f32[96]{0}, f32[96]{0}) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[8,25,13,96]{3,2,1,0} get-tuple-element(%bn), index=0
  %mean = f32[96]{0} get-tuple-element(%bn), index=1
  %var = f32[96]{0} get-tuple-element(%bn), index=2
  ROOT %t = (f32[8,25,13,96]{3,2,1,0}, f32[96]{0}, f32[96]{0}) tuple(%y, %mean, %var)
})");
}

// The gradient at the statistics of a training op (a variance that is one), 1,088 rows of
// 130 features: three row tiles, two column tiles.
TEST(ExactBatchNorm, GradAtTrainingStatistics) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[4,16,17,130], g: f32[130], b: f32[130], dy: f32[4,16,17,130]) -> (f32[4,16,17,130], f32[130], f32[130]) {
  %x = f32[4,16,17,130]{3,2,1,0} parameter(0)
  %g = f32[130]{0} parameter(1)
  %b = f32[130]{0} parameter(2)
  %dy = f32[4,16,17,130]{3,2,1,0} parameter(3)
  %bn = (f32[4,16,17,130]{3,2,1,0}, f32[130]{0}, f32[130]{0}) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=3
  %mean = f32[130]{0} get-tuple-element(%bn), index=1
  %var = f32[130]{0} get-tuple-element(%bn), index=2
  %grad = (f32[4,16,17,130]{3,2,1,0}, f32[130]{0}, f32[130]{0}) batch-norm-grad(%x, %g, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = f32[4,16,17,130]{3,2,1,0} get-tuple-element(%grad), index=0
  %dg = f32[130]{0} get-tuple-element(%grad), index=1
  %db = f32[130]{0} get-tuple-element(%grad), index=2
  ROOT %t = (f32[4,16,17,130]{3,2,1,0}, f32[130]{0}, f32[130]{0}) tuple(%dx, %dg, %db)
})");
}

// Inference with given statistics (a positive variance: v * v), 297 rows of 64 features.
TEST(ExactBatchNorm, InferenceAtRaggedSizes) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[3,9,11,64], g: f32[64], b: f32[64], m: f32[64], v: f32[64]) -> f32[3,9,11,64] {
  %x = f32[3,9,11,64]{3,2,1,0} parameter(0)
  %g = f32[64]{0} parameter(1)
  %b = f32[64]{0} parameter(2)
  %m = f32[64]{0} parameter(3)
  %v = f32[64]{0} parameter(4)
  %var = f32[64]{0} multiply(%v, %v)
  ROOT %y = f32[3,9,11,64]{3,2,1,0} batch-norm-inference(%x, %g, %b, %m, %var), epsilon=0.001, feature_index=3
})");
}

// Flat streams (feature_stream.h): 64 features, 16 rows per vreg, 400 vregs (three chunks
// of 128 and a rest); training and its gradient in one module.
TEST(ExactBatchNorm, FlatTrainingAndGradOverChunks) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[16,20,20,64], g: f32[64], b: f32[64], dy: f32[16,20,20,64]) -> (f32[16,20,20,64], f32[64], f32[64], f32[16,20,20,64], f32[64], f32[64]) {
  %x = f32[16,20,20,64]{3,2,1,0} parameter(0)
  %g = f32[64]{0} parameter(1)
  %b = f32[64]{0} parameter(2)
  %dy = f32[16,20,20,64]{3,2,1,0} parameter(3)
  %bn = (f32[16,20,20,64]{3,2,1,0}, f32[64]{0}, f32[64]{0}) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[16,20,20,64]{3,2,1,0} get-tuple-element(%bn), index=0
  %mean = f32[64]{0} get-tuple-element(%bn), index=1
  %var = f32[64]{0} get-tuple-element(%bn), index=2
  %grad = (f32[16,20,20,64]{3,2,1,0}, f32[64]{0}, f32[64]{0}) batch-norm-grad(%x, %g, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = f32[16,20,20,64]{3,2,1,0} get-tuple-element(%grad), index=0
  %dg = f32[64]{0} get-tuple-element(%grad), index=1
  %db = f32[64]{0} get-tuple-element(%grad), index=2
  ROOT %t = (f32[16,20,20,64]{3,2,1,0}, f32[64]{0}, f32[64]{0}, f32[16,20,20,64]{3,2,1,0}, f32[64]{0}, f32[64]{0}) tuple(%y, %mean, %var, %dx, %dg, %db)
})");
}

// 2,048 features: a row is two vregs, each with its own pattern and accumulators.
TEST(ExactBatchNorm, FlatTrainingAndGradWithATwoVregPeriod) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[2,3,5,2048], g: f32[2048], b: f32[2048], dy: f32[2,3,5,2048]) -> (f32[2,3,5,2048], f32[2048], f32[2048], f32[2,3,5,2048], f32[2048], f32[2048]) {
  %x = f32[2,3,5,2048]{3,2,1,0} parameter(0)
  %g = f32[2048]{0} parameter(1)
  %b = f32[2048]{0} parameter(2)
  %dy = f32[2,3,5,2048]{3,2,1,0} parameter(3)
  %bn = (f32[2,3,5,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[2,3,5,2048]{3,2,1,0} get-tuple-element(%bn), index=0
  %mean = f32[2048]{0} get-tuple-element(%bn), index=1
  %var = f32[2048]{0} get-tuple-element(%bn), index=2
  %grad = (f32[2,3,5,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}) batch-norm-grad(%x, %g, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = f32[2,3,5,2048]{3,2,1,0} get-tuple-element(%grad), index=0
  %dg = f32[2048]{0} get-tuple-element(%grad), index=1
  %db = f32[2048]{0} get-tuple-element(%grad), index=2
  ROOT %t = (f32[2,3,5,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}, f32[2,3,5,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}) tuple(%y, %mean, %var, %dx, %dg, %db)
})");
}

// Inference over 720 rows of 128 features (90 vregs).
TEST(ExactBatchNorm, FlatInference) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[5,12,12,128], g: f32[128], b: f32[128], m: f32[128], v: f32[128]) -> f32[5,12,12,128] {
  %x = f32[5,12,12,128]{3,2,1,0} parameter(0)
  %g = f32[128]{0} parameter(1)
  %b = f32[128]{0} parameter(2)
  %m = f32[128]{0} parameter(3)
  %v = f32[128]{0} parameter(4)
  %var = f32[128]{0} multiply(%v, %v)
  ROOT %y = f32[5,12,12,128]{3,2,1,0} batch-norm-inference(%x, %g, %b, %m, %var), epsilon=0.001, feature_index=3
})");
}

}  // namespace
}  // namespace tpusim
