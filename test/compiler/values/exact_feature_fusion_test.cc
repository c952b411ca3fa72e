// Fusions on the feature-stream kernel (compiler/lowering/reduce/feature_fusion_kernel.h),
// each element against the evaluator's: per-feature sums of a bf16 value and of its squares
// in one read (a multi-output fusion, the statistics of a batch norm the partitioner
// expands), for features below a vreg (64: rows folded) and above it (2,048: two vregs per
// row); and a whole training block of such batch norms, whose normalize, ReLU and gradient
// run as loop fusions over bf16 matrices and per-feature vectors.
#include <gtest/gtest.h>

#include <string>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;

constexpr const char* kAdd = R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
)";

// Whether core 0's program (the feature stream's kernels say "# feature stream") or an op's
// note (the convolution that sums its output says so) holds `what`: the values would
// match on other kernels too.
bool Uses(const std::string& hlo, const std::string& what) {
  bool exact = false;
  std::string inexact;
  auto c = testing::CompileForValues(hlo, sim::LoadConfig("v3-8"), exact, inexact);
  if (!c) return false;
  if (c->lowered.programs.at(0).find(what) != std::string::npos) return true;
  for (const lowering::LoweredOp& op : c->lowered.ops)
    if (op.note.find(what) != std::string::npos) return true;
  return false;
}

// The module's batch splits over the 8 cores; each sums its rows and the sums are
// all-reduced.
std::string Sums(const std::string& shape, const std::string& features) {
  return std::string(kAdd) + "ENTRY %main (x: bf16[" + shape + "]) -> (f32[" + features +
         "], f32[" + features + "]) {\n  %x = bf16[" + shape + "]{3,2,1,0} parameter(0)\n" +
         "  %wide = f32[" + shape + "]{3,2,1,0} convert(%x)\n  %z = f32[] constant(0)\n" +
         "  %sum = f32[" + features + "]{0} reduce(%wide, %z), dimensions={0,1,2}, " +
         "to_apply=%add\n  %sq = f32[" + shape + "]{3,2,1,0} multiply(%wide, %wide)\n" +
         "  %squares = f32[" + features + "]{0} reduce(%sq, %z), dimensions={0,1,2}, " +
         "to_apply=%add\n  ROOT %t = (f32[" + features + "], f32[" + features +
         "]) tuple(%sum, %squares)\n}\n";
}

TEST(ExactFeatureFusion, SumsOfABf16ValueAndItsSquaresFoldedRows) {
  ExpectMatch(Sums("16,8,8,64", "64"));
  EXPECT_TRUE(Uses(Sums("16,8,8,64", "64"), "# feature stream"));
}

TEST(ExactFeatureFusion, SumsOfABf16ValueAndItsSquaresOverTwoVregsPerRow) {
  ExpectMatch(Sums("8,2,2,2048", "2048"));
  EXPECT_TRUE(Uses(Sums("8,2,2,2048", "2048"), "# feature stream: 8 vregs, period 2"));
}

// flax's batch-norm gradient: three per-feature sums over the same dy and x (of dy, of
// dy (x - mean), of -dy c), one multi-output fusion whose third sum accumulates in v29.
std::string ThreeSums(const std::string& shape, const std::string& features) {
  const std::string m = "f32[" + shape + "]{3,2,1,0}", v = "f32[" + features + "]{0}";
  return std::string(kAdd) + "ENTRY %main (x: bf16[" + shape + "], dy: bf16[" + shape +
         "], mean: " + v + ", c: " + v + ") -> (" + v + ", " + v + ", " + v + ") {\n" +
         "  %x = bf16[" + shape + "]{3,2,1,0} parameter(0)\n  %dy = bf16[" + shape +
         "]{3,2,1,0} parameter(1)\n  %mean = " + v + " parameter(2)\n  %c = " + v +
         " parameter(3)\n  %xw = " + m + " convert(%x)\n  %dw = " + m + " convert(%dy)\n" +
         "  %mb = " + m + " broadcast(%mean), dimensions={3}\n  %cb = " + m +
         " broadcast(%c), dimensions={3}\n  %xc = " + m + " subtract(%xw, %mb)\n" + "  %p = " + m +
         " multiply(%dw, %xc)\n  %q = " + m + " multiply(%dw, %cb)\n" + "  %nq = " + m +
         " negate(%q)\n  %z = f32[] constant(0)\n" + "  %s1 = " + v +
         " reduce(%dw, %z), dimensions={0,1,2}, to_apply=%add\n" + "  %s2 = " + v +
         " reduce(%p, %z), dimensions={0,1,2}, to_apply=%add\n" + "  %s3 = " + v +
         " reduce(%nq, %z), dimensions={0,1,2}, to_apply=%add\n" + "  ROOT %t = (" + v + ", " + v +
         ", " + v + ") tuple(%s1, %s2, %s3)\n}\n";
}

TEST(ExactFeatureFusion, ThreeSumsOfOneGradientFoldedRows) {
  ExpectMatch(ThreeSums("16,8,8,64", "64"));
  EXPECT_TRUE(Uses(ThreeSums("16,8,8,64", "64"), "vadd v29, v29, "));
}

TEST(ExactFeatureFusion, ThreeSumsOfOneGradientOverTwoVregsPerRow) {
  ExpectMatch(ThreeSums("8,2,2,2048", "2048"));
  EXPECT_TRUE(Uses(ThreeSums("8,2,2,2048", "2048"), "vadd v29, v29, "));
}

constexpr const char* kTrainingBlock =
    R"(ENTRY %main (x: bf16[16,4,4,256], g: f32[256], b: f32[256], dz: bf16[16,4,4,256]) -> (bf16[16,4,4,256], bf16[16,4,4,256], f32[256], f32[256]) {
  %x = bf16[16,4,4,256]{3,2,1,0} parameter(0)
  %g = f32[256]{0} parameter(1)
  %b = f32[256]{0} parameter(2)
  %dz = bf16[16,4,4,256]{3,2,1,0} parameter(3)
  %xf = f32[16,4,4,256]{3,2,1,0} convert(%x)
  %bn = (f32[16,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}) batch-norm-training(%xf, %g, %b), epsilon=0.001, feature_index=3
  %yf = f32[16,4,4,256]{3,2,1,0} get-tuple-element(%bn), index=0
  %mean = f32[256]{0} get-tuple-element(%bn), index=1
  %var = f32[256]{0} get-tuple-element(%bn), index=2
  %y = bf16[16,4,4,256]{3,2,1,0} convert(%yf)
  %zero = bf16[] constant(0)
  %zeros = bf16[16,4,4,256]{3,2,1,0} broadcast(%zero), dimensions={}
  %relu = bf16[16,4,4,256]{3,2,1,0} maximum(%y, %zeros)
  %on = pred[16,4,4,256]{3,2,1,0} compare(%relu, %zeros), direction=GT
  %dy = bf16[16,4,4,256]{3,2,1,0} select(%on, %dz, %zeros)
  %dyf = f32[16,4,4,256]{3,2,1,0} convert(%dy)
  %grad = (f32[16,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}) batch-norm-grad(%xf, %g, %mean, %var, %dyf), epsilon=0.001, feature_index=3
  %dxf = f32[16,4,4,256]{3,2,1,0} get-tuple-element(%grad), index=0
  %dx = bf16[16,4,4,256]{3,2,1,0} convert(%dxf)
  %dg = f32[256]{0} get-tuple-element(%grad), index=1
  %db = f32[256]{0} get-tuple-element(%grad), index=2
  ROOT %t = (bf16[16,4,4,256]{3,2,1,0}, bf16[16,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}) tuple(%relu, %dx, %dg, %db)
})";

// conv-free ResNet block pieces at global batch: batch norm on a widened bf16 x, ReLU in
// bf16, and the gradient of both, expanded by the partitioner (sums all-reduced); the
// normalize and ReLU, the gradient's dx and its sums are fusions on the feature stream.
TEST(ExactFeatureFusion, ExpandedBatchNormTrainingAndGradientWithRelu) {
  ExpectMatch(std::string(kAdd) + kTrainingBlock, 1e-2);
  EXPECT_TRUE(Uses(std::string(kAdd) + kTrainingBlock, "# feature stream"));
}

constexpr const char* kConvBlock =
    R"(ENTRY %main (x: bf16[16,8,8,64], w: bf16[3,3,64,128], g: f32[128], b: f32[128]) -> (bf16[16,8,8,128], f32[128], f32[128]) {
  %x = bf16[16,8,8,64]{3,2,1,0} parameter(0)
  %w = bf16[3,3,64,128]{3,2,1,0} parameter(1)
  %g = f32[128]{0} parameter(2)
  %b = f32[128]{0} parameter(3)
  %conv = bf16[16,8,8,128]{3,2,1,0} convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %cf = f32[16,8,8,128]{3,2,1,0} convert(%conv)
  %bn = (f32[16,8,8,128]{3,2,1,0}, f32[128]{0}, f32[128]{0}) batch-norm-training(%cf, %g, %b), epsilon=0.001, feature_index=3
  %yf = f32[16,8,8,128]{3,2,1,0} get-tuple-element(%bn), index=0
  %y = bf16[16,8,8,128]{3,2,1,0} convert(%yf)
  %zero = bf16[] constant(0)
  %zeros = bf16[16,8,8,128]{3,2,1,0} broadcast(%zero), dimensions={}
  %relu = bf16[16,8,8,128]{3,2,1,0} maximum(%y, %zeros)
  %mean = f32[128]{0} get-tuple-element(%bn), index=1
  %var = f32[128]{0} get-tuple-element(%bn), index=2
  ROOT %t = (bf16[16,8,8,128]{3,2,1,0}, f32[128]{0}, f32[128]{0}) tuple(%relu, %mean, %var)
})";

// The same batch norm over a bf16 convolution's output: the convolution sums its output as
// it drains (convolution-statistics-fusion on the expanded sums), the sums are all-reduced,
// the normalize and ReLU stream flat.
TEST(ExactFeatureFusion, ConvolutionSumsItsOutputForAnExpandedBatchNorm) {
  ExpectMatch(std::string(kAdd) + kConvBlock, 1e-2);
  EXPECT_TRUE(Uses(std::string(kAdd) + kConvBlock, "summed as it drains"));
}

}  // namespace
}  // namespace tpusim
