// bf16 end to end (bf16-conversion-folding, docs/compiler.md): a bf16 convolution whose f32
// result is rounded to bf16, batch norm over it widened back to f32 and its output rounded to
// bf16, as the model zoo and JAX write a bf16 layer, then the gradient with bf16 x and dy.
// After folding, the convolution writes bf16 and the batch-norm kernels read and write bf16
// (flat feature streams, f32 statistics); each module is simulated on v3-8 and compared
// with the evaluator on the unfolded module.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;

// Per core: 8 images of 8x8 pixels, 64 features (16 rows of features per vreg).
constexpr const char* kConvBatchNorm = R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[8,8,8,64], k: bf16[3,3,64,64], g: f32[64], b: f32[64]) -> (bf16[8,8,8,64], f32[64], f32[64]) {
  %x = bf16[8,8,8,64]{3,2,1,0} parameter(0)
  %k = bf16[3,3,64,64]{3,2,1,0} parameter(1)
  %g = f32[64]{0} parameter(2)
  %b = f32[64]{0} parameter(3)
  %conv = f32[8,8,8,64]{3,2,1,0} convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %round = bf16[8,8,8,64]{3,2,1,0} convert(%conv)
  %wide = f32[8,8,8,64]{3,2,1,0} convert(%round)
  %bn = (f32[8,8,8,64]{3,2,1,0}, f32[64]{0}, f32[64]{0}) batch-norm-training(%wide, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[8,8,8,64]{3,2,1,0} get-tuple-element(%bn), index=0
  %mean = f32[64]{0} get-tuple-element(%bn), index=1
  %var = f32[64]{0} get-tuple-element(%bn), index=2
  %y16 = bf16[8,8,8,64]{3,2,1,0} convert(%y)
  ROOT %t = (bf16[8,8,8,64]{3,2,1,0}, f32[64]{0}, f32[64]{0}) tuple(%y16, %mean, %var)
})";

TEST(ExactBf16BatchNorm, ConvolutionAndTrainingInBf16) { ExpectMatch(kConvBatchNorm); }

// 2,048 features: each row spans two vregs (period 2).
TEST(ExactBf16BatchNorm, GradWithBf16ValuesAndGradient) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[4,2,2,2048], g: f32[2048], mean: f32[2048], var: f32[2048], dy: bf16[4,2,2,2048]) -> (bf16[4,2,2,2048], f32[2048], f32[2048]) {
  %x = bf16[4,2,2,2048]{3,2,1,0} parameter(0)
  %g = f32[2048]{0} parameter(1)
  %mean = f32[2048]{0} parameter(2)
  %var0 = f32[2048]{0} parameter(3)
  %one = f32[] constant(1)
  %ones = f32[2048]{0} broadcast(%one), dimensions={}
  %var = f32[2048]{0} add(%var0, %ones)
  %dy = bf16[4,2,2,2048]{3,2,1,0} parameter(4)
  %xw = f32[4,2,2,2048]{3,2,1,0} convert(%x)
  %dyw = f32[4,2,2,2048]{3,2,1,0} convert(%dy)
  %bn = (f32[4,2,2,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}) batch-norm-grad(%xw, %g, %mean, %var, %dyw), epsilon=0.001, feature_index=3
  %dx = f32[4,2,2,2048]{3,2,1,0} get-tuple-element(%bn), index=0
  %dg = f32[2048]{0} get-tuple-element(%bn), index=1
  %db = f32[2048]{0} get-tuple-element(%bn), index=2
  %dx16 = bf16[4,2,2,2048]{3,2,1,0} convert(%dx)
  ROOT %t = (bf16[4,2,2,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}) tuple(%dx16, %dg, %db)
})",
              1e-5);
}

}  // namespace
}  // namespace tpusim
