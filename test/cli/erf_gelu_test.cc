// `tpusim run` on exact GELU as JAX (jax.nn.gelu, approximate=False) and BERT's original
// activation write it, 0.5 x (1 + erf(x / sqrt 2)) after a dense layer: the erf composition
// runs in the bias-add fusion and the results equal the reference evaluator's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "test/cli/cli_test_util.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kDenseGelu = R"(HloModule dense_gelu, replica_count=8

%fused_gelu (p0: f32[128,512], p1: f32[512]) -> f32[128,512] {
  %p0 = f32[128,512]{1,0} parameter(0)
  %p1 = f32[512]{0} parameter(1)
  %bias = f32[128,512]{1,0} broadcast(%p1), dimensions={1}
  %x = f32[128,512]{1,0} add(%p0, %bias)
  %sqrt2 = f32[] constant(1.41421354)
  %bsqrt2 = f32[128,512]{1,0} broadcast(%sqrt2), dimensions={}
  %scaled = f32[128,512]{1,0} divide(%x, %bsqrt2)
  %erf = f32[128,512]{1,0} erf(%scaled)
  %one = f32[] constant(1)
  %bone = f32[128,512]{1,0} broadcast(%one), dimensions={}
  %sum = f32[128,512]{1,0} add(%erf, %bone)
  %prod = f32[128,512]{1,0} multiply(%x, %sum)
  %two = f32[] constant(2)
  %btwo = f32[128,512]{1,0} broadcast(%two), dimensions={}
  ROOT %gelu = f32[128,512]{1,0} divide(%prod, %btwo)
}

ENTRY %main (x: f32[128,256], w: f32[256,512], b: f32[512]) -> f32[128,512] {
  %x = f32[128,256]{1,0} parameter(0)
  %w = f32[256,512]{1,0} parameter(1)
  %b = f32[512]{0} parameter(2)
  %dot = f32[128,512]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %gelu = f32[128,512]{1,0} fusion(%dot, %b), kind=kLoop, calls=%fused_gelu
})";

TEST(CliErfGelu, DenseLayerWithExactGeluMatchesTheEvaluator) {
  const std::string path = ::testing::TempDir() + "tpusim_dense_gelu.hlo";
  std::ofstream(path) << kDenseGelu;
  const Output o = Tpusim("run " + path);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("kernels: 1 MXU, 1 VPU, 0 DMA, 0 collective"));
  EXPECT_THAT(o.text, Not(HasSubstr("timing-only")));
  EXPECT_THAT(o.text, HasSubstr("(match)"));
  // The fusion's loop body carries the erf rational (its highest numerator coefficient among
  // the constants) and no note of an approximated op.
  const Output isa = Tpusim("compile " + path + " --emit isa");
  ASSERT_EQ(isa.status, 0) << isa.text;
  EXPECT_THAT(isa.text, HasSubstr(", 0.000229050659\n"));
  EXPECT_THAT(isa.text, Not(HasSubstr("approximat")));
  std::remove(path.c_str());
}

// The module as a single-device JAX program writes it (no replicas): the batch of 128 is
// split over the eight cores, 16 rows each, and every core's share still matches.
TEST(CliErfGelu, SingleReplicaDenseGeluSplitOverTheCoresMatchesTheEvaluator) {
  std::string hlo = kDenseGelu;
  hlo.replace(hlo.find(", replica_count=8"), 17, "");
  const std::string path = ::testing::TempDir() + "tpusim_dense_gelu_split.hlo";
  std::ofstream(path) << hlo;
  const Output o = Tpusim("run " + path);
  std::remove(path.c_str());
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("data parallel: global batch 128 split over 8 cores"));
  EXPECT_THAT(o.text, Not(HasSubstr("timing-only")));
  EXPECT_THAT(o.text, HasSubstr("(match)"));
}

// An is-finite of integers is rejected with the op's name, as XLA's shape inference does.
TEST(CliErfGelu, IsFiniteOfIntegersIsAClearError) {
  const std::string path = ::testing::TempDir() + "tpusim_is_finite_s32.hlo";
  std::ofstream(path) << "HloModule bad\nENTRY %main (n: s32[4]) -> pred[4] {\n"
                         "  %n = s32[4]{0} parameter(0)\n  ROOT %f = pred[4]{0} is-finite(%n)\n}\n";
  const Output o = Tpusim("run " + path);
  EXPECT_NE(o.status, 0);
  EXPECT_THAT(o.text, HasSubstr("%f: is-finite needs a floating-point operand, not s32[4]"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tpusim::cli
