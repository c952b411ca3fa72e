// Kernels under the inferred data-parallel split of a single-replica module (batch_sharding.h
// and the SPMD partitioner), simulated on v3-8 and compared with the evaluator: batch-norm
// training whose statistics cover the whole batch (each core's sums all-reduced), a bf16 ->
// f32 convert, dots and tiled VPU ops on each core's share.
#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/spmd/batch_analysis.h"
#include "test/compiler/values/sim_values_util.h"

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

// A dense layer's forward and backward pass on 3 rows per core: dots split along M (x w)
// and along K (the weight gradient x^T e, a partial sum all-reduced), a bias broadcast
// over the rows and reductions over the batch, over everything and over each row.
TEST(DataParallel, DenseLayerDotsAndTiledOpsOnEachCoresRows) {
  ExpectMatch(R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (w: f32[200,30], bias: f32[30], x: f32[24,200], t: f32[24,30]) -> (f32[24,30], f32[200,30], f32[30], f32[], f32[24], f32[24,200]) {
  %w = f32[200,30]{1,0} parameter(0)
  %bias = f32[30]{0} parameter(1)
  %x = f32[24,200]{1,0} parameter(2)
  %t = f32[24,30]{1,0} parameter(3)
  %xw = f32[24,30]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bb = f32[24,30]{1,0} broadcast(%bias), dimensions={1}
  %y = f32[24,30]{1,0} add(%xw, %bb)
  %dy = f32[24,30]{1,0} subtract(%y, %t)
  %dw = f32[200,30]{1,0} dot(%x, %dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %zero = f32[] constant(0)
  %db = f32[30]{0} reduce(%dy, %zero), dimensions={0}, to_apply=%add
  %sq = f32[24,30]{1,0} multiply(%y, %y)
  %all = f32[] reduce(%sq, %zero), dimensions={0,1}, to_apply=%add
  %rows = f32[24]{0} reduce(%sq, %zero), dimensions={1}, to_apply=%add
  %dx = f32[24,200]{1,0} dot(%dy, %w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT %out = (f32[24,30], f32[200,30], f32[30], f32[], f32[24], f32[24,200]) tuple(%y, %dw, %db, %all, %rows, %dx)
})");
}

TEST(DataParallel, AWholeWeightWithTheBatchsSizeIsGatheredForItsDot) {
  // %d feeds a dot's weight operand, so it stays whole while %x is split: the partitioner
  // gathers %x's rows for the contraction over them (it was timing-only when the kernels
  // split the batch: a K split would pair each core's rows of %x with the wrong rows of %d).
  ExpectMatch(R"(HloModule m
ENTRY %main (d: f32[24,30], x: f32[24,200]) -> f32[200,30] {
  %d = f32[24,30]{1,0} parameter(0)
  %x = f32[24,200]{1,0} parameter(1)
  ROOT %dw = f32[200,30]{1,0} dot(%x, %d), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})");
}

TEST(DataParallel, AttentionScoresSplitAlongTheirOuterBatchDimension) {
  // [batch, heads] dot of each core's 2 examples (before: timing-only under the split).
  ExpectMatch(R"(HloModule m
ENTRY %main (x: f32[16,128,64], y: f32[16,128,64]) -> f32[16,2,128,128] {
  %x = f32[16,128,64]{2,1,0} parameter(0)
  %y = f32[16,128,64]{2,1,0} parameter(1)
  %q2 = f32[16,128,64]{2,1,0} multiply(%x, %x)
  %k2 = f32[16,128,64]{2,1,0} add(%x, %y)
  %q = f32[16,128,2,32]{3,2,1,0} reshape(%q2)
  %k = f32[16,128,2,32]{3,2,1,0} reshape(%k2)
  ROOT %s = f32[16,2,128,128]{3,2,1,0} dot(%q, %k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
})");
}

// A dense layer on [batch, sequence, features] as JAX emits it: the forward and input
// gradient dots merge [16, 128] into M, the weight gradient contracts {0, 1} (K, split, so
// each core's partial sum is all-reduced). All three were timing-only before.
constexpr const char* kDense3d = R"(HloModule m
ENTRY %main (x: f32[16,128,64], w: f32[64,96], t: f32[16,128,96]) -> (f32[16,128,64], f32[64,96]) {
  %x = f32[16,128,64]{2,1,0} parameter(0)
  %w = f32[64,96]{1,0} parameter(1)
  %t = f32[16,128,96]{2,1,0} parameter(2)
  %y = f32[16,128,96]{2,1,0} dot(%x, %w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  %dy = f32[16,128,96]{2,1,0} subtract(%y, %t)
  %dx = f32[16,128,64]{2,1,0} dot(%dy, %w), lhs_contracting_dims={2}, rhs_contracting_dims={1}
  %dw = f32[64,96]{1,0} dot(%x, %dy), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  ROOT %r = (f32[16,128,64]{2,1,0}, f32[64,96]{1,0}) tuple(%dx, %dw)
})";

TEST(DataParallel, DenseLayerOnSequencesMergesLeadingDimensions) { ExpectMatch(kDense3d); }

TEST(DataParallel, DenseLayerOnSequencesReplicated) {
  ExpectMatch(std::string(kDense3d).replace(0, 11, "HloModule m, replica_count=8"));
}

TEST(DataParallel, AReshapeThatMergesTheBatchIsSplitAlongTheMergedRows) {
  // [16, 128, 64] -> [2048, 64]: the batch is the major part of the merged dimension, so
  // each core's 2 examples are its 256 contiguous rows (a dense layer over a sequence).
  // Until stop 19 the module ran whole on every core; before stop 16 the reshape counted as
  // a partial sum and was all-reduced.
  const char* text = R"(HloModule m
ENTRY %main (x: f32[16,128,64], w: f32[64,64]) -> f32[2048,64] {
  %x = f32[16,128,64]{2,1,0} parameter(0)
  %w = f32[64,64]{1,0} parameter(1)
  %x2 = f32[2048,64]{1,0} reshape(%x)
  ROOT %q = f32[2048,64]{1,0} dot(%x2, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  auto parsed = hlo::ParseHlo(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const spmd::BatchAnalysis a = spmd::AnalyzeBatch(parsed.value(), 8);
  EXPECT_EQ(a.batch, 16) << a.why_not;
  bool exact = false;
  std::string inexact;
  auto c = testing::CompileForValues(text, sim::LoadConfig("v3-8"), exact, inexact);
  ASSERT_TRUE(c);
  EXPECT_NE(c->report.hlo.find("f32[256,64]{1,0:T(8,128)} reshape("), std::string::npos);
  ExpectMatch(text);
}

TEST(DataParallel, AMaximumOverTheBatchIsAllReducedByMaximum) {
  // Before, each core's maximum was all-reduced by addition (error 6.4 of the largest value).
  ExpectMatch(R"(HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[64,256]) -> f32[256] {
  %x = f32[64,256]{1,0} parameter(0)
  %ninf = f32[] constant(-inf)
  ROOT %r = f32[256]{0} reduce(%x, %ninf), dimensions={0}, to_apply=%max
})");
}

// batch-norm-inference of each core's rows with `features` features (both were timing-only
// under a split): 128 stream flat, 100 run on the tiled passes.
std::string SplitBatchNormInference(const std::string& features) {
  std::string text = R"(HloModule m
ENTRY %main (x: f32[16,6,6,F], g: f32[F], b: f32[F], m: f32[F], v: f32[F]) -> f32[16,6,6,F] {
  %x = f32[16,6,6,F]{3,2,1,0} parameter(0)
  %g = f32[F]{0} parameter(1)
  %b = f32[F]{0} parameter(2)
  %m = f32[F]{0} parameter(3)
  %v = f32[F]{0} parameter(4)
  ROOT %y = f32[16,6,6,F]{3,2,1,0} batch-norm-inference(%x, %g, %b, %m, %v), epsilon=0.001, feature_index=3
})";
  for (size_t at; (at = text.find('F')) != std::string::npos;) text.replace(at, 1, features);
  return text;
}

TEST(DataParallel, BatchNormInferenceFlatOnEachCoresRows) {
  ExpectMatch(SplitBatchNormInference("128"));
}

TEST(DataParallel, BatchNormInferenceTiledOnEachCoresRows) {
  ExpectMatch(SplitBatchNormInference("100"));
}

TEST(DataParallel, OneHotLabelsFromAnIotaOnEachCoresRows) {
  // An iota counting along the classes is the same on every core's rows (before: timing-only
  // under a split); the s32 one counts along features.
  ExpectMatch(R"(HloModule m
ENTRY %main (x: f32[64,256], l: s32[64]) -> (f32[64,256], s32[64,256]) {
  %x = f32[64,256]{1,0} parameter(0)
  %l = s32[64]{0} parameter(1)
  %io = s32[64,256]{1,0} iota(), iota_dimension=1
  %lb = s32[64,256]{1,0} broadcast(%l), dimensions={0}
  %eq = pred[64,256]{1,0} compare(%io, %lb), direction=EQ
  %one = f32[] constant(1)
  %zero = f32[] constant(0)
  %o = f32[64,256]{1,0} broadcast(%one), dimensions={}
  %z = f32[64,256]{1,0} broadcast(%zero), dimensions={}
  %oh = f32[64,256]{1,0} select(%eq, %o, %z)
  %r = f32[64,256]{1,0} multiply(%oh, %x)
  ROOT %t = (f32[64,256]{1,0}, s32[64,256]{1,0}) tuple(%r, %io)
})");
}

// batch-norm-grad of each core's rows of x and dy with `features` features: the sums over
// the batch all-reduced between two kernels, so dx, dgamma and dbeta are whole-batch (before:
// timing-only, dgamma and dbeta summed after a timing-only kernel).
std::string SplitBatchNormGrad(const std::string& features) {
  std::string text = R"(HloModule m
ENTRY %main (x: f32[16,6,6,F], g: f32[F], m: f32[F], v: f32[F], dy: f32[16,6,6,F]) -> (f32[16,6,6,F], f32[F], f32[F]) {
  %x = f32[16,6,6,F]{3,2,1,0} parameter(0)
  %g = f32[F]{0} parameter(1)
  %m = f32[F]{0} parameter(2)
  %v = f32[F]{0} parameter(3)
  %dy = f32[16,6,6,F]{3,2,1,0} parameter(4)
  %r = (f32[16,6,6,F]{3,2,1,0}, f32[F]{0}, f32[F]{0}) batch-norm-grad(%x, %g, %m, %v, %dy), epsilon=0.001, feature_index=3
  %dx = f32[16,6,6,F]{3,2,1,0} get-tuple-element(%r), index=0
  %dg = f32[F]{0} get-tuple-element(%r), index=1
  %db = f32[F]{0} get-tuple-element(%r), index=2
  ROOT %t = (f32[16,6,6,F]{3,2,1,0}, f32[F]{0}, f32[F]{0}) tuple(%dx, %dg, %db)
})";
  for (size_t at; (at = text.find('F')) != std::string::npos;) text.replace(at, 1, features);
  return text;
}

TEST(DataParallel, BatchNormGradOverTheWholeBatch) { ExpectMatch(SplitBatchNormGrad("128")); }

TEST(DataParallel, BatchNormGradOfWideFeaturesOverTheWholeBatch) {
  ExpectMatch(SplitBatchNormGrad("2048"));
}

TEST(DataParallel, BatchNormGradsScaleAndOffsetGradientsAreSummedOverTheCores) {
  auto parsed = hlo::ParseHlo(R"(HloModule m
ENTRY %main (x: f32[16,6,6,128], g: f32[128], m: f32[128], v: f32[128], dy: f32[16,6,6,128]) -> (f32[16,6,6,128], f32[128], f32[128]) {
  %x = f32[16,6,6,128]{3,2,1,0} parameter(0)
  %g = f32[128]{0} parameter(1)
  %m = f32[128]{0} parameter(2)
  %v = f32[128]{0} parameter(3)
  %dy = f32[16,6,6,128]{3,2,1,0} parameter(4)
  %r = (f32[16,6,6,128]{3,2,1,0}, f32[128]{0}, f32[128]{0}) batch-norm-grad(%x, %g, %m, %v, %dy), epsilon=0.001, feature_index=3
  %dx = f32[16,6,6,128]{3,2,1,0} get-tuple-element(%r), index=0
  %dg = f32[128]{0} get-tuple-element(%r), index=1
  %db = f32[128]{0} get-tuple-element(%r), index=2
  ROOT %t = (f32[16,6,6,128]{3,2,1,0}, f32[128]{0}, f32[128]{0}) tuple(%dx, %dg, %db)
})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const spmd::BatchAnalysis a = spmd::AnalyzeBatch(parsed.value(), 8);
  EXPECT_EQ(a.batch, 16) << a.why_not;
  // Partitioned, the gradient's sums over each core's rows are all-reduced (dscale, dbeta).
  bool exact = false;
  std::string inexact;
  auto c = testing::CompileForValues(hlo::PrintModule(parsed.value()), sim::LoadConfig("v3-8"),
                                     exact, inexact);
  ASSERT_TRUE(c);
  EXPECT_NE(c->report.hlo.find("all-reduce"), std::string::npos);
}

TEST(DataParallel, AConcatenateAlongTheBatchKeepsTheModuleWhole) {
  const char* text = R"(HloModule m
ENTRY %main (x: f32[64,256], y: f32[64,256]) -> f32[128,256] {
  %x = f32[64,256]{1,0} parameter(0)
  %y = f32[64,256]{1,0} parameter(1)
  ROOT %c = f32[128,256]{1,0} concatenate(%x, %y), dimensions={0}
})";
  auto parsed = hlo::ParseHlo(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const spmd::BatchAnalysis a = spmd::AnalyzeBatch(parsed.value(), 8);
  EXPECT_EQ(a.batch, 0);
  EXPECT_EQ(a.why_not,
            "%c (concatenate) takes the batch dimension (64) away in a way the cores' parts "
            "cannot be combined by an all-reduce");
  ExpectMatch(text);
}

// Each core's share through a depthwise convolution (rewritten into dense ones over channel
// slices, concatenated) and the data movement attention and grouped layers do along the
// features: slices (a fused QKV projection split), a concatenate, a pad and a transpose that
// keep the batch leading, on each core's rows.
TEST(DataParallel, DepthwiseConvolutionAndMovesAlongTheFeatures) {
  ExpectMatch(R"(HloModule m
ENTRY %main (k: f32[3,3,1,32], x: f32[16,8,8,32]) -> (f32[16,8,8,32], f32[16,8,8,32], f32[16,10,8,16], f32[16,8,16,8]) {
  %k = f32[3,3,1,32]{3,2,1,0} parameter(0)
  %x = f32[16,8,8,32]{3,2,1,0} parameter(1)
  %c = f32[16,8,8,32]{3,2,1,0} convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=32
  %lo = f32[16,8,8,16]{3,2,1,0} slice(%c), slice={[0:16], [0:8], [0:8], [0:16]}
  %hi = f32[16,8,8,16]{3,2,1,0} slice(%c), slice={[0:16], [0:8], [0:8], [16:32]}
  %swapped = f32[16,8,8,32]{3,2,1,0} concatenate(%hi, %lo), dimensions={3}
  %zero = f32[] constant(0)
  %padded = f32[16,10,8,16]{3,2,1,0} pad(%lo, %zero), padding=0_0x1_1x0_0x0_0
  %t = f32[16,8,16,8]{3,2,1,0} transpose(%hi), dimensions={0,1,3,2}
  ROOT %r = (f32[16,8,8,32], f32[16,8,8,32], f32[16,10,8,16], f32[16,8,16,8]) tuple(%c, %swapped, %padded, %t)
})");
}

}  // namespace
}  // namespace tpusim
