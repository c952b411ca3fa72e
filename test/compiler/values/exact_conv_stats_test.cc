// convolution-statistics-fusion (passes/fusion/conv_stats_fusion.h) with values: a bf16
// convolution sums its output and the squares per feature as it drains, and the batch-norm
// fusion normalizes from those sums; each module is simulated on v3-8 and compared with
// the evaluator on the unfused module.
#include <gtest/gtest.h>

#include "test/compiler/values/batch_norm_modules.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;

// conv(x, w) in bf16, then relu(batch-norm-training) as ResNet's layers compute it; $K is
// the kernel window ("3x3" or "1x1"), $P its padding, $C cin and $F cout.
std::string ConvBatchNormRelu(const std::string& x, const std::string& out, const std::string& cin,
                              const std::string& cout, const std::string& window) {
  std::string text = R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[$X], w: bf16[$W], g: f32[$F], b: f32[$F]) -> (bf16[$S], f32[$F], f32[$F]) {
  %x = bf16[$X]{3,2,1,0} parameter(0)
  %w = bf16[$W]{3,2,1,0} parameter(1)
  %g = f32[$F]{0} parameter(2)
  %b = f32[$F]{0} parameter(3)
  %c = bf16[$S]{3,2,1,0} convolution(%x, %w), window={$K}, dim_labels=b01f_01io->b01f
  %cw = f32[$S]{3,2,1,0} convert(%c)
  %bn = (f32[$S]{3,2,1,0}, f32[$F]{0}, f32[$F]{0}) batch-norm-training(%cw, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[$S]{3,2,1,0} get-tuple-element(%bn), index=0
  %mean = f32[$F]{0} get-tuple-element(%bn), index=1
  %var = f32[$F]{0} get-tuple-element(%bn), index=2
  %y16 = bf16[$S]{3,2,1,0} convert(%y)
  %zero = bf16[] constant(0)
  %zeros = bf16[$S]{3,2,1,0} broadcast(%zero), dimensions={}
  %relu = bf16[$S]{3,2,1,0} maximum(%y16, %zeros)
  ROOT %t = (bf16[$S]{3,2,1,0}, f32[$F]{0}, f32[$F]{0}) tuple(%relu, %mean, %var)
})";
  const bool three = window.find("3x3") != std::string::npos;
  text = testing::WithShape(text, out, cout);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"$X", x},
                                   {"$W", (three ? "3,3," : "1,1,") + cin + "," + cout},
                                   {"$K", window}})
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at))
      text.replace(at, key.size(), value), at += value.size();
  return text;
}

// Compiles to the statistics fusion and the batch-norm fusion reading its sums; then the
// values match the evaluator's within one bf16 ulp of the largest |reference| (the kernel
// sums in f32 in its own order; a few normalized elements round to a neighbouring bf16).
void ExpectFusedMatch(const std::string& hlo) {
  auto c = CompileForBoard(hlo, "test.hlo",
                           driver::TargetFor(sim::LoadConfig("v3-8"), /*infeed=*/false));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const std::string& ir = c.value()->report.hlo;
  EXPECT_NE(ir.find("kind=kOutput, calls=%fused_convolution_statistics"), std::string::npos) << ir;
  EXPECT_NE(ir.find("batch-norm-inference("), std::string::npos) << ir;
  EXPECT_EQ(ir.find("batch-norm-training("), std::string::npos) << ir;
  ExpectMatch(hlo, 1.0 / 256);
}

// ResNet's first-stage 3x3 convolution (64 channels, folded taps) with its batch norm.
TEST(ExactConvStatistics, ThreeByThreeBatchNormRelu) {
  ExpectFusedMatch(ConvBatchNormRelu("8,8,8,64", "8,8,8,64", "64", "64", "size=3x3 pad=1_1x1_1"));
}

// A 1x1 expansion to 256 channels: two cout blocks, split over the MXUs.
TEST(ExactConvStatistics, OneByOneExpansionTo256) {
  ExpectFusedMatch(ConvBatchNormRelu("8,4,4,128", "8,4,4,256", "128", "256", "size=1x1"));
}

// A 7x7 image, 16 images per core: blocks of 49 rows per image fill whole vregs only as
// images stack; the statistics still cover every row once.
TEST(ExactConvStatistics, SevenBySevenImages) {
  ExpectFusedMatch(ConvBatchNormRelu("128,7,7,128", "128,7,7,128", "128", "128", "size=1x1"));
}

// A projection block's end: relu(bn(conv(x, w1)) + bn(conv(x, w2))). The first batch norm
// takes the add and ReLU; the second stays outside any fusion (its normalized value is the
// add's other operand) and gets a fusion of its own around the sums.
TEST(ExactConvStatistics, ProjectionShortcutBatchNormOutsideAFusion) {
  const std::string hlo = R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[8,4,4,128], w1: bf16[1,1,128,256], w2: bf16[1,1,128,256], g: f32[256], b: f32[256]) -> (bf16[8,4,4,256], f32[256], f32[256]) {
  %x = bf16[8,4,4,128]{3,2,1,0} parameter(0)
  %w1 = bf16[1,1,128,256]{3,2,1,0} parameter(1)
  %w2 = bf16[1,1,128,256]{3,2,1,0} parameter(2)
  %g = f32[256]{0} parameter(3)
  %b = f32[256]{0} parameter(4)
  %c1 = bf16[8,4,4,256]{3,2,1,0} convolution(%x, %w1), window={size=1x1}, dim_labels=b01f_01io->b01f
  %c2 = bf16[8,4,4,256]{3,2,1,0} convolution(%x, %w2), window={size=1x1}, dim_labels=b01f_01io->b01f
  %bn1 = (bf16[8,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}) batch-norm-training(%c1, %g, %b), epsilon=0.001, feature_index=3
  %bn2 = (bf16[8,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}) batch-norm-training(%c2, %g, %b), epsilon=0.001, feature_index=3
  %y1 = bf16[8,4,4,256]{3,2,1,0} get-tuple-element(%bn1), index=0
  %y2 = bf16[8,4,4,256]{3,2,1,0} get-tuple-element(%bn2), index=0
  %m1 = f32[256]{0} get-tuple-element(%bn1), index=1
  %v2 = f32[256]{0} get-tuple-element(%bn2), index=2
  %sum = bf16[8,4,4,256]{3,2,1,0} add(%y1, %y2)
  %zero = bf16[] constant(0)
  %zeros = bf16[8,4,4,256]{3,2,1,0} broadcast(%zero), dimensions={}
  %relu = bf16[8,4,4,256]{3,2,1,0} maximum(%sum, %zeros)
  ROOT %t = (bf16[8,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}) tuple(%relu, %m1, %v2)
})";
  auto c = CompileForBoard(hlo, "test.hlo",
                           driver::TargetFor(sim::LoadConfig("v3-8"), /*infeed=*/false));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const std::string& ir = c.value()->report.hlo;
  size_t fusions = 0;
  for (size_t at = ir.find("calls=%fused_convolution_statistics"); at != std::string::npos;
       at = ir.find("calls=%fused_convolution_statistics", at + 1))
    ++fusions;
  EXPECT_EQ(fusions, 2u) << ir;
  EXPECT_EQ(ir.find("batch-norm-training("), std::string::npos) << ir;
  ExpectMatch(hlo, 1.0 / 256);
}

}  // namespace
}  // namespace tpusim
