// convolution-statistics-fusion, IR in and IR out: the batch-norm fusion over a bf16
// convolution takes the sums the convolution's fusion computes, and normalizes from them.
#include "compiler/passes/fusion/conv_stats_fusion.h"

#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/fusion/bn_fusion.h"
#include "compiler/passes/fusion/fusion.h"
#include "compiler/passes/fusion/multi_output_fusion.h"

namespace tpusim::passes {
namespace {

// The module after elementwise fusion, batch-norm-fusion, this pass and dce, printed;
// `changed` says whether this pass changed it.
// With `sums`, elementwise fusion fuses per-feature sums and multi-output fusion pairs them,
// as the pipeline does.
std::string Fuse(const std::string& text, bool* changed = nullptr, bool sums = false) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  const target::TargetDescription& target = lowering::TensorCoreTarget();
  EXPECT_TRUE(ElementwiseFusionPass(sums ? &target : nullptr).Run(*m).ok());
  if (sums) {
    EXPECT_TRUE(MultiOutputFusionPass(target).Run(*m).ok());
  }
  EXPECT_TRUE(BatchNormFusionPass(lowering::TensorCoreTarget()).Run(*m).ok());
  hlo::Result<bool> r = ConvStatisticsFusionPass(lowering::TensorCoreTarget()).Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (changed) *changed = r.ok() && *r;
  EXPECT_TRUE(DcePass().Run(*m).ok());
  EXPECT_TRUE(hlo::VerifyModule(*m).ok()) << hlo::VerifyModule(*m).message();
  return hlo::PrintModule(*m);
}

std::string Entry(const std::string& printed) { return printed.substr(printed.find("ENTRY")); }

// ResNet's layer: a bf16 3x3 convolution, batch norm, ReLU; the convolution also read by
// another user (`%other`).
constexpr const char* kConvBatchNormRelu = R"(HloModule m
ENTRY %main (x: bf16[8,8,8,64], w: bf16[3,3,64,64], g: f32[64], b: f32[64]) -> (bf16[8,8,8,64], f32[64], f32[64], bf16[8,8,8,64]) {
  %x = bf16[8,8,8,64] parameter(0)
  %w = bf16[3,3,64,64] parameter(1)
  %g = f32[64] parameter(2)
  %b = f32[64] parameter(3)
  %conv = bf16[8,8,8,64] convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %bn = (bf16[8,8,8,64], f32[64], f32[64]) batch-norm-training(%conv, %g, %b), epsilon=0.001, feature_index=3
  %y = bf16[8,8,8,64] get-tuple-element(%bn), index=0
  %mean = f32[64] get-tuple-element(%bn), index=1
  %var = f32[64] get-tuple-element(%bn), index=2
  %zero = bf16[] constant(0)
  %zeros = bf16[8,8,8,64] broadcast(%zero), dimensions={}
  %relu = bf16[8,8,8,64] maximum(%y, %zeros)
  %other = bf16[8,8,8,64] negate(%conv)
  ROOT %t = (bf16[8,8,8,64], f32[64], f32[64], bf16[8,8,8,64]) tuple(%relu, %mean, %var, %other)
})";

TEST(PassConvStatistics, BatchNormTakesTheConvolutionsSums) {
  bool changed = false;
  const std::string out = Fuse(kConvBatchNormRelu, &changed);
  EXPECT_TRUE(changed);
  // The convolution's fusion: conv, then the f32 sums of it and of its squares over
  // everything but the feature dimension.
  for (const char* line :
       {"%conv = bf16[8,8,8,64] convolution(bf16[8,8,8,64] %param_0, bf16[3,3,64,64] %param_1)",
        "%wide = f32[8,8,8,64] convert(bf16[8,8,8,64] %conv)",
        "%sum = f32[64] reduce(f32[8,8,8,64] %wide, f32[] %constant), dimensions={0,1,2}, "
        "to_apply=%statistics_add",
        "%square = f32[8,8,8,64] multiply(f32[8,8,8,64] %wide, f32[8,8,8,64] %wide)",
        "ROOT %tuple = (bf16[8,8,8,64], f32[64], f32[64]) tuple(bf16[8,8,8,64] %conv, f32[64] "
        "%sum, f32[64] %sum_squares)"})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  // The batch norm from the sums: mean = sum / 512, var = max(squares / 512 - mean^2, 0).
  for (const char* line :
       {"%mean = f32[64] multiply(f32[64] %sum, f32[64] %broadcast)",
        "%spread = f32[64] subtract(f32[64] %mean_square, f32[64] %square_mean)",
        "%var = f32[64] maximum(f32[64] %spread, f32[64] %broadcast.1)",
        "%normalized = bf16[8,8,8,64] batch-norm-inference(bf16[8,8,8,64] %param_0, f32[64] "
        "%param_1, f32[64] %param_2, f32[64] %mean, f32[64] %var), epsilon=0.001, "
        "feature_index=3",
        "f32[] constant(0.001953125)"})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  const std::string entry = Entry(out);
  // The convolution's result keeps its name; both its users read it; the batch-norm fusion
  // takes the sums last.
  for (const char* line :
       {"%conv = bf16[8,8,8,64] get-tuple-element((bf16[8,8,8,64], f32[64], f32[64]) %fusion.2), "
        "index=0",
        "%other = bf16[8,8,8,64] negate(bf16[8,8,8,64] %conv)",
        "f32[64] %conv.sum, f32[64] %conv.sum_squares), kind=kOutput, calls=%fused_batch_norm"})
    EXPECT_NE(entry.find(line), std::string::npos) << line << "\n" << entry;
  EXPECT_EQ(out.find("batch-norm-training"), std::string::npos) << out;
}

// An f32 convolution keeps its batch norm's own statistics pass (the kernel sums the bf16
// results it rounds).
TEST(PassConvStatistics, F32ConvolutionIsLeftAlone) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(R"(HloModule m
ENTRY %main (x: bf16[8,8,8,64], w: bf16[3,3,64,64], g: f32[64], b: f32[64]) -> (f32[8,8,8,64], f32[64]) {
  %x = bf16[8,8,8,64] parameter(0)
  %w = bf16[3,3,64,64] parameter(1)
  %g = f32[64] parameter(2)
  %b = f32[64] parameter(3)
  %conv = f32[8,8,8,64] convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %bn = (f32[8,8,8,64], f32[64], f32[64]) batch-norm-training(%conv, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[8,8,8,64] get-tuple-element(%bn), index=0
  %mean = f32[64] get-tuple-element(%bn), index=1
  %zero = f32[] constant(0)
  %zeros = f32[8,8,8,64] broadcast(%zero), dimensions={}
  %relu = f32[8,8,8,64] maximum(%y, %zeros)
  ROOT %t = (f32[8,8,8,64], f32[64]) tuple(%relu, %mean)
})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(ElementwiseFusionPass().Run(*m).ok());
  ASSERT_TRUE(BatchNormFusionPass(lowering::TensorCoreTarget()).Run(*m).ok());
  hlo::Result<bool> r = ConvStatisticsFusionPass(lowering::TensorCoreTarget()).Run(*m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(*r);
  EXPECT_EQ(hlo::PrintModule(*m).find("statistics_add"), std::string::npos);
}

// A batch norm the partitioner expanded: its sums of f32(x) and f32(x)^2 are one
// multi-output fusion over a bf16 convolution's result, which the convolution then
// computes as it drains; the sums' readers (here an all-reduce) read its elements.
TEST(PassConvStatistics, ExpandedSumsOfAConvolutionMoveIntoItsDrain) {
  bool changed = false;
  const std::string out = Entry(Fuse(R"(HloModule m, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: bf16[8,8,8,64], w: bf16[3,3,64,64]) -> (f32[64], f32[64], bf16[8,8,8,64]) {
  %x = bf16[8,8,8,64] parameter(0)
  %w = bf16[3,3,64,64] parameter(1)
  %conv = bf16[8,8,8,64] convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %wide = f32[8,8,8,64] convert(%conv)
  %z = f32[] constant(0)
  %sum = f32[64] reduce(%wide, %z), dimensions={0,1,2}, to_apply=%add
  %sq = f32[8,8,8,64] multiply(%wide, %wide)
  %squares = f32[64] reduce(%sq, %z), dimensions={0,1,2}, to_apply=%add
  %all = (f32[64], f32[64]) all-reduce(%sum, %squares), replica_groups={}, to_apply=%add
  %s0 = f32[64] get-tuple-element(%all), index=0
  %s1 = f32[64] get-tuple-element(%all), index=1
  ROOT %t = (f32[64], f32[64], bf16[8,8,8,64]) tuple(%s0, %s1, %conv)
})",
                                     &changed, /*sums=*/true));
  EXPECT_TRUE(changed);
  EXPECT_EQ(out.find("kInput"), std::string::npos) << out;  // no pass of its own over conv
  EXPECT_NE(out.find("kind=kOutput, calls=%fused_convolution_statistics"), std::string::npos)
      << out;
  // conv and the sums are elements 0, 1 and 2 of the convolution's fusion
  EXPECT_NE(out.find("%conv = bf16[8,8,8,64] get-tuple-element("), std::string::npos) << out;
  EXPECT_NE(out.find("all-reduce(f32[64] %fusion"), std::string::npos) << out;
  EXPECT_NE(out.find("index=2"), std::string::npos) << out;
}

}  // namespace
}  // namespace tpusim::passes
