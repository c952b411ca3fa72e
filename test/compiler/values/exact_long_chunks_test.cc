// Streams long enough for chunks longer than 128 vregs (vpu_stream.h, feature_stream.h: a
// slot's areas grow when fewer operands share it): 2,048 vregs per core give 256-vreg
// chunks, so the areas move and both slots are used. Simulated on v3-8 with values and
// compared with the evaluator.
#include <gtest/gtest.h>

#include "test/compiler/values/batch_norm_modules.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;

// A residual add and ReLU in bf16 over 2M elements per core: one VPU stream of two inputs.
TEST(ExactLongChunks, VpuStreamOfTwoInputs) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[2048,1024], r: bf16[2048,1024]) -> bf16[2048,1024] {
  %x = bf16[2048,1024]{1,0} parameter(0)
  %r = bf16[2048,1024]{1,0} parameter(1)
  %sum = bf16[2048,1024]{1,0} add(%x, %r)
  %zero = bf16[] constant(0)
  %zeros = bf16[2048,1024]{1,0} broadcast(%zero), dimensions={}
  ROOT %relu = bf16[2048,1024]{1,0} maximum(%sum, %zeros)
})");
}

// Batch norm and ReLU in bf16 over 2M elements per core, 1,024 features: the sums and the
// normalizing pass (with the ReLU fused) stream in 256-vreg chunks.
TEST(ExactLongChunks, BatchNormFeatureStreams) {
  ExpectMatch(testing::Bf16BatchNormRelu("8,16,16,1024", "1024"));
}

// Batch-norm gradient in bf16 over 2M elements per core: the sums read two matrices, dx
// streams from two into a third, both in 256-vreg chunks.
TEST(ExactLongChunks, BatchNormGradFeatureStreams) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[8,16,16,1024], g: f32[1024], mean: f32[1024], var: f32[1024], dy: bf16[8,16,16,1024]) -> (bf16[8,16,16,1024], f32[1024], f32[1024]) {
  %x = bf16[8,16,16,1024]{3,2,1,0} parameter(0)
  %g = f32[1024]{0} parameter(1)
  %mean = f32[1024]{0} parameter(2)
  %var0 = f32[1024]{0} parameter(3)
  %one = f32[] constant(1)
  %ones = f32[1024]{0} broadcast(%one), dimensions={}
  %var = f32[1024]{0} add(%var0, %ones)
  %dy = bf16[8,16,16,1024]{3,2,1,0} parameter(4)
  %xw = f32[8,16,16,1024]{3,2,1,0} convert(%x)
  %dyw = f32[8,16,16,1024]{3,2,1,0} convert(%dy)
  %bn = (f32[8,16,16,1024]{3,2,1,0}, f32[1024]{0}, f32[1024]{0}) batch-norm-grad(%xw, %g, %mean, %var, %dyw), epsilon=0.001, feature_index=3
  %dx = f32[8,16,16,1024]{3,2,1,0} get-tuple-element(%bn), index=0
  %dg = f32[1024]{0} get-tuple-element(%bn), index=1
  %db = f32[1024]{0} get-tuple-element(%bn), index=2
  %dx16 = bf16[8,16,16,1024]{3,2,1,0} convert(%dx)
  ROOT %t = (bf16[8,16,16,1024]{3,2,1,0}, f32[1024]{0}, f32[1024]{0}) tuple(%dx16, %dg, %db)
})");
}

}  // namespace
}  // namespace tpusim
