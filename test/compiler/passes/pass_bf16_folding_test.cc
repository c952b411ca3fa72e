// bf16-conversion-folding, IR in and IR out: converts between bf16 and f32 around
// convolutions and batch norms fold into them where the kernels take the mixed precision.
#include "compiler/passes/bf16_folding.h"

#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "compiler/passes/dce.h"

namespace tpusim::passes {
namespace {

// The module after the pass and dce, printed; `changed` says whether the pass changed it.
std::string Fold(const std::string& text, bool* changed = nullptr) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  hlo::Result<bool> r = Bf16ConversionFoldingPass(lowering::TensorCoreTarget()).Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (changed) *changed = r.ok() && *r;
  EXPECT_TRUE(DcePass().Run(*m).ok());
  EXPECT_TRUE(hlo::VerifyModule(*m).ok()) << hlo::VerifyModule(*m).message();
  return hlo::PrintModule(*m);
}

// The line of `name` in printed HLO, without its metadata.
std::string Line(const std::string& printed, const std::string& name) {
  const size_t at = printed.find("%" + name + " = ");
  if (at == std::string::npos) return "";
  return printed.substr(at, printed.find('\n', at) - at);
}

constexpr const char* kLayer = R"(HloModule m
ENTRY %main (x: bf16[8,8,8,64], k: bf16[3,3,64,64], g: f32[64], b: f32[64]) -> (bf16[8,8,8,64], f32[64]) {
  %x = bf16[8,8,8,64] parameter(0)
  %k = bf16[3,3,64,64] parameter(1)
  %g = f32[64] parameter(2)
  %b = f32[64] parameter(3)
  %conv = f32[8,8,8,64] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %round = bf16[8,8,8,64] convert(%conv)
  %wide = f32[8,8,8,64] convert(%round)
  %bn = (f32[8,8,8,64], f32[64], f32[64]) batch-norm-training(%wide, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[8,8,8,64] get-tuple-element(%bn), index=0
  %mean = f32[64] get-tuple-element(%bn), index=1
  %y16 = bf16[8,8,8,64] convert(%y)
  ROOT %t = (bf16[8,8,8,64], f32[64]) tuple(%y16, %mean)
})";

TEST(PassBf16Folding, ConvolutionAndBatchNormMoveBf16) {
  bool changed = false;
  const std::string out = Fold(kLayer, &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(Line(out, "conv").find("%conv = bf16[8,8,8,64]"), std::string::npos) << out;
  const std::string bn = Line(out, "bn");
  EXPECT_NE(bn.find("(bf16[8,8,8,64], f32[64], f32[64]) batch-norm-training(bf16[8,8,8,64] %conv"),
            std::string::npos)
      << bn;
  EXPECT_NE(Line(out, "y").find("%y = bf16[8,8,8,64]"), std::string::npos) << out;
  for (const char* gone : {"round", "wide", "y16"}) EXPECT_EQ(Line(out, gone), "") << gone;
  EXPECT_NE(out.find("tuple(bf16[8,8,8,64] %y, f32[64] %mean)"), std::string::npos) << out;
}

TEST(PassBf16Folding, AnF32UserKeepsTheF32Result) {
  // %conv is also read as f32: it keeps its type; the batch norm still reads bf16 %round.
  const std::string out = Fold(R"(HloModule m
ENTRY %main (x: bf16[8,8,8,64], k: bf16[3,3,64,64], g: f32[64], b: f32[64]) -> (f32[8,8,8,64], f32[8,8,8,64]) {
  %x = bf16[8,8,8,64] parameter(0)
  %k = bf16[3,3,64,64] parameter(1)
  %g = f32[64] parameter(2)
  %b = f32[64] parameter(3)
  %conv = f32[8,8,8,64] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %round = bf16[8,8,8,64] convert(%conv)
  %wide = f32[8,8,8,64] convert(%round)
  %bn = (f32[8,8,8,64], f32[64], f32[64]) batch-norm-training(%wide, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[8,8,8,64] get-tuple-element(%bn), index=0
  ROOT %t = (f32[8,8,8,64], f32[8,8,8,64]) tuple(%y, %conv)
})");
  EXPECT_NE(Line(out, "conv").find("%conv = f32[8,8,8,64]"), std::string::npos) << out;
  EXPECT_NE(Line(out, "bn").find("batch-norm-training(bf16[8,8,8,64] %round"), std::string::npos)
      << out;
  EXPECT_NE(Line(out, "y").find("%y = f32[8,8,8,64]"), std::string::npos) << out;
}

// A convolution's f32 result zero-interleaved by a pad, then rounded: the convert moves
// onto the pad's operand (round 1) and folds into the convolution (round 2).
TEST(PassBf16Folding, ConvertsMoveThroughPadsIntoTheConvolution) {
  bool changed = false;
  const std::string out = Fold(R"(HloModule m
ENTRY %main (x: bf16[2,4,4,128], k: bf16[1,1,128,128]) -> bf16[2,8,8,128] {
  %x = bf16[2,4,4,128] parameter(0)
  %k = bf16[1,1,128,128] parameter(1)
  %conv = f32[2,4,4,128] convolution(%x, %k), window={size=1x1}, dim_labels=b01f_01io->b01f
  %zero = f32[] constant(0)
  %pad = f32[2,8,8,128] pad(%conv, %zero), padding=0_0x0_1_1x0_1_1x0_0
  ROOT %round = bf16[2,8,8,128] convert(%pad)
})",
                               &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(Line(out, "conv").find("%conv = bf16[2,4,4,128]"), std::string::npos) << out;
  EXPECT_NE(Line(out, "pad")
                .find("%pad = bf16[2,8,8,128] pad(bf16[2,4,4,128] %conv, bf16[] "
                      "%zero.bf16)"),
            std::string::npos)
      << out;
  EXPECT_NE(Line(out, "zero.bf16").find("bf16[] constant(0)"), std::string::npos) << out;
  EXPECT_EQ(out.find("convert("), std::string::npos) << out;
}

TEST(PassBf16Folding, MovesTheKernelCannotRunInBf16StayF32) {
  struct Case {
    const char *out, *value, *padding;
  };
  // Padding along the last dimension (2-byte runs), and a pad value other than +0.
  for (const Case& k : {Case{"2,4,4,130", "0", "0_0x0_0x0_0x0_2"},
                        Case{"2,8,8,128", "-1", "0_0x0_1_1x0_1_1x0_0"}}) {
    bool changed = true;
    const std::string out =
        Fold(std::string("HloModule m\nENTRY %main (x: f32[2,4,4,128]) -> bf16[") + k.out +
                 "] {\n  %x = f32[2,4,4,128] parameter(0)\n  %v = f32[] constant(" + k.value +
                 ")\n  %pad = f32[" + k.out + "] pad(%x, %v), padding=" + k.padding +
                 "\n  ROOT %round = bf16[" + k.out + "] convert(%pad)\n}\n",
             &changed);
    EXPECT_FALSE(changed) << out;
    EXPECT_NE(Line(out, "pad").find("%pad = f32["), std::string::npos) << out;
  }
}

TEST(PassBf16Folding, KernelsThatTakeOnlyF32AreLeftAlone) {
  // 200 features do not stream flat (the tiled batch-norm kernel reads f32 only), and the
  // weight-gradient kernel writes f32: nothing folds.
  bool changed = true;
  const std::string out = Fold(R"(HloModule m
ENTRY %main (x: bf16[2,5,7,200], g: f32[200], b: f32[200], a: f32[8,18,18,4], d: f32[8,16,16,5]) -> (bf16[2,5,7,200], bf16[3,3,4,5]) {
  %x = bf16[2,5,7,200] parameter(0)
  %g = f32[200] parameter(1)
  %b = f32[200] parameter(2)
  %wide = f32[2,5,7,200] convert(%x)
  %bn = (f32[2,5,7,200], f32[200], f32[200]) batch-norm-training(%wide, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[2,5,7,200] get-tuple-element(%bn), index=0
  %y16 = bf16[2,5,7,200] convert(%y)
  %a = f32[8,18,18,4] parameter(3)
  %d = f32[8,16,16,5] parameter(4)
  %dw = f32[3,3,4,5] convolution(%a, %d), window={size=16x16}, dim_labels=f01b_i01o->01bf
  %dw16 = bf16[3,3,4,5] convert(%dw)
  ROOT %t = (bf16[2,5,7,200], bf16[3,3,4,5]) tuple(%y16, %dw16)
})",
                               &changed);
  EXPECT_FALSE(changed) << out;
}

// Found by difftest seed 39: a ragged result (48 elements) folded to bf16 left its readers
// on a kernel that reads only 32-bit elements, timing-only where the unfolded program was
// exact. A result that is not a whole number of vregs stays f32.
TEST(PassBf16Folding, RaggedResultsStayF32) {
  bool changed = true;
  const std::string out = Fold(R"(HloModule m
ENTRY %main (x: f32[1,6,4,8], k: f32[3,3,8,8]) -> f32[1,3,2,8] {
  %x = f32[1,6,4,8] parameter(0)
  %k = f32[3,3,8,8] parameter(1)
  %conv = f32[1,3,2,8] convolution(%x, %k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %round = bf16[1,3,2,8] convert(%conv)
  ROOT %wide = f32[1,3,2,8] convert(%round)
})",
                               &changed);
  EXPECT_FALSE(changed) << out;
}

}  // namespace
}  // namespace tpusim::passes
