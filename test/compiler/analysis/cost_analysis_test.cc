// FLOPs as XLA's HloCostAnalysis counts them: exact counts for each rule, worked by hand.
#include "compiler/analysis/cost_analysis.h"

#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"

namespace tpusim::analysis {
namespace {

hlo::HloModule Parse(const std::string& text) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  hlo::HloModule module = std::move(m).value();
  EXPECT_TRUE(hlo::VerifyModule(module).ok());
  return module;
}

// The cost of the entry's root.
OpCost RootCost(const std::string& text) {
  const hlo::HloModule m = Parse(text);
  return CostOf(*m.entry()->root());
}

TEST(CostAnalysis, DotIsTwoFlopsPerMultiplyAdd) {
  const OpCost c = RootCost(R"(HloModule t
ENTRY %e {
  %a = f32[64,128] parameter(0)
  %b = f32[128,256] parameter(1)
  ROOT %d = f32[64,256] dot(f32[64,128] %a, f32[128,256] %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  EXPECT_EQ(c.flops, 2.0 * 64 * 256 * 128);
  EXPECT_EQ(c.transcendentals, 0);
}

TEST(CostAnalysis, ConvolutionSkipsTapsOnPadding) {
  // 3x3 SAME over 4x4: per dimension the taps k = 0, 1, 2 reach 3, 4, 3 outputs, so 10 of
  // the 12 (output, tap) pairs read the input; 10 x 10 x cin 2 x cout 3 x batch 1.
  const OpCost c = RootCost(R"(HloModule t
ENTRY %e {
  %x = f32[1,4,4,2] parameter(0)
  %w = f32[3,3,2,3] parameter(1)
  ROOT %y = f32[1,4,4,3] convolution(f32[1,4,4,2] %x, f32[3,3,2,3] %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})");
  EXPECT_EQ(c.flops, 2.0 * 100 * 2 * 3);
}

TEST(CostAnalysis, ConvolutionSkipsLhsDilationHoles) {
  // An input gradient of a stride-2 layer: 3 inputs dilated by 2 (positions 0, 2, 4 of 5),
  // a 3-tap window, padding 1. Output o and tap k read dilated position o + k - 1; of the
  // 15 pairs, 7 land on a real input: position 0 (o, k) = (0, 1), (1, 0); position 2 (1, 2),
  // (2, 1), (3, 0); position 4 (3, 2), (4, 1). Features 1 x 1, batch 1.
  const OpCost c = RootCost(R"(HloModule t
ENTRY %e {
  %x = f32[1,3,1] parameter(0)
  %w = f32[3,1,1] parameter(1)
  ROOT %y = f32[1,5,1] convolution(f32[1,3,1] %x, f32[3,1,1] %w), window={size=3 pad=1_1 lhs_dilate=2}, dim_labels=b0f_0io->b0f
})");
  EXPECT_EQ(c.flops, 2.0 * 7);
}

TEST(CostAnalysis, GroupedConvolutionDividesTheInputFeatures) {
  const OpCost c = RootCost(R"(HloModule t
ENTRY %e {
  %x = f32[2,4,4,8] parameter(0)
  %w = f32[1,1,2,8] parameter(1)
  ROOT %y = f32[2,4,4,8] convolution(f32[2,4,4,8] %x, f32[1,1,2,8] %w), window={size=1x1}, dim_labels=b01f_01io->b01f, feature_group_count=4
})");
  EXPECT_EQ(c.flops, 2.0 * (8 / 4) * 8 * 2 * 16);
}

TEST(CostAnalysis, ElementwiseAndTranscendentals) {
  EXPECT_EQ(RootCost(R"(HloModule t
ENTRY %e {
  %a = f32[10,10] parameter(0)
  ROOT %r = f32[10,10] add(f32[10,10] %a, f32[10,10] %a)
})")
                .flops,
            100);
  const OpCost exp = RootCost(R"(HloModule t
ENTRY %e {
  %a = f32[10,10] parameter(0)
  ROOT %r = f32[10,10] exponential(f32[10,10] %a)
})");
  EXPECT_EQ(exp.flops, 0);
  EXPECT_EQ(exp.transcendentals, 100);
}

TEST(CostAnalysis, ReductionsCountTheirReducerPerFoldedElement) {
  const std::string add = R"(%add {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
)";
  EXPECT_EQ(RootCost("HloModule t\n" + add + R"(
ENTRY %e {
  %a = f32[8,16] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[8] reduce(f32[8,16] %a, f32[] %z), dimensions={1}, to_apply=%add
})")
                .flops,
            128 - 8);
  EXPECT_EQ(RootCost("HloModule t\n" + add + R"(
ENTRY %e {
  %a = f32[1,4,4,1] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[1,2,2,1] reduce-window(f32[1,4,4,1] %a, f32[] %z), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_0x1_0x0_0}, to_apply=%add
})")
                .flops,
            (9 - 1) * 4);
}

TEST(CostAnalysis, FusionsWhileLoopsAndBatchNorm) {
  EXPECT_EQ(RootCost(R"(HloModule t
%f {
  %p = f32[4] parameter(0)
  %m = f32[4] multiply(f32[4] %p, f32[4] %p)
  ROOT %a = f32[4] add(f32[4] %m, f32[4] %p)
}
ENTRY %e {
  %x = f32[4] parameter(0)
  ROOT %r = f32[4] fusion(f32[4] %x), kind=kLoop, calls=%f
})")
                .flops,
            8);
  // One trip of the body (a multiply of 4 elements) and the condition (a compare).
  EXPECT_EQ(RootCost(R"(HloModule t
%body {
  %p = f32[4] parameter(0)
  ROOT %m = f32[4] multiply(f32[4] %p, f32[4] %p)
}
%cond {
  %p = f32[4] parameter(0)
  %s = f32[] constant(0)
  %t = f32[] constant(1)
  ROOT %c = pred[] compare(f32[] %s, f32[] %t), direction=LT
}
ENTRY %e {
  %x = f32[4] parameter(0)
  ROOT %w = f32[4] while(f32[4] %x), condition=%cond, body=%body
})")
                .flops,
            4 + 1);
  EXPECT_EQ(RootCost(R"(HloModule t
ENTRY %e {
  %x = f32[2,4,4,8] parameter(0)
  %g = f32[8] parameter(1)
  %b = f32[8] parameter(2)
  ROOT %r = (f32[2,4,4,8], f32[8], f32[8]) batch-norm-training(f32[2,4,4,8] %x, f32[8] %g, f32[8] %b), epsilon=0.001, feature_index=3
})")
                .flops,
            6 * 256);
}

TEST(CostAnalysis, DataMovementIsFree) {
  EXPECT_EQ(RootCost(R"(HloModule t
ENTRY %e {
  %a = f32[8,16] parameter(0)
  ROOT %t = f32[16,8] transpose(f32[8,16] %a), dimensions={1,0}
})")
                .flops,
            0);
}

}  // namespace
}  // namespace tpusim::analysis
