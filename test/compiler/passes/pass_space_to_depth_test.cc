// space-to-depth, IR in and IR out: the RGB stem's forward convolution and weight gradient
// become stride-1 convolutions over one folded image, the cases left alone, and the
// evaluator's values before and after the rewrite.
#include "compiler/passes/conv_canon/space_to_depth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "compiler/passes/dce.h"

namespace tpusim::passes {
namespace {

struct Result {
  bool changed = false;
  hlo::HloModule module;
  std::string entry;  // the printed entry computation
};

Result Rewrite(const std::string& text) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  hlo::Result<bool> r = SpaceToDepthPass(lowering::TensorCoreTarget()).Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(DcePass().Run(*m).ok());
  EXPECT_TRUE(hlo::VerifyModule(*m).ok()) << hlo::VerifyModule(*m).message();
  const std::string printed = hlo::PrintModule(*m);
  return {r.ok() && *r, std::move(*m), printed.substr(printed.find("ENTRY"))};
}

// The stem as a training step has it: Y = conv(X, W) 7x7 stride 2 (JAX's SAME padding,
// 2 low and 3 high), and dW from X and dY (window dilation 2).
constexpr const char* kStem = R"(HloModule m
ENTRY %main (x: bf16[2,32,32,3], w: bf16[7,7,3,64], dy: bf16[2,16,16,64]) -> (f32[2,16,16,64], f32[7,7,3,64]) {
  %x = bf16[2,32,32,3] parameter(0)
  %w = bf16[7,7,3,64] parameter(1)
  %dy = bf16[2,16,16,64] parameter(2)
  %y = f32[2,16,16,64] convolution(%x, %w), window={size=7x7 stride=2x2 pad=2_3x2_3}, dim_labels=b01f_01io->b01f
  %dw = f32[7,7,3,64] convolution(%x, %dy), window={size=16x16 pad=2_3x2_3 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf
  ROOT %t = (f32[2,16,16,64], f32[7,7,3,64]) tuple(%y, %dw)
})";

TEST(PassSpaceToDepth, StemConvolutionsReadOneFoldedImage) {
  const Result r = Rewrite(kStem);
  ASSERT_TRUE(r.changed);
  const std::string& e = r.entry;
  // X padded to 38 = 2 x 19 rows and columns (2 low, 4 high), its 2x2 blocks moved into 12
  // channels once for both convolutions.
  EXPECT_NE(
      e.find("bf16[2,38,38,3] pad(bf16[2,32,32,3] %x, bf16[] %y.zero), padding=0_0x2_4x2_4x0_0"),
      std::string::npos)
      << e;
  EXPECT_NE(e.find("bf16[2,19,2,19,2,3] bitcast(bf16[2,38,38,3] %y.pad)"), std::string::npos) << e;
  EXPECT_NE(e.find("bf16[2,19,19,2,2,3] transpose(bf16[2,19,2,19,2,3] %y.bitcast), "
                   "dimensions={0,1,3,2,4,5}"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("bf16[2,19,19,12] bitcast(bf16[2,19,19,2,2,3] %y.transpose)"), std::string::npos)
      << e;
  EXPECT_EQ(e.find("%dw.pad"), std::string::npos) << e;  // the weight gradient reuses it
  // The forward kernel: 7x7 padded to 8x8, folded to 4x4 taps of 12 channels.
  EXPECT_NE(e.find("bf16[4,4,12,64] bitcast(bf16[4,4,2,2,3,64] %y.transpose.1)"), std::string::npos)
      << e;
  EXPECT_NE(e.find("%y.folded = f32[2,16,16,64] convolution(bf16[2,19,19,12] %y.bitcast.1, "
                   "bf16[4,4,12,64] %y.bitcast.3), window={size=4x4}, dim_labels=b01f_01io->b01f"),
            std::string::npos)
      << e;
  // The weight gradient: a 4x4x12 one, unfolded and cropped to 7x7x3.
  EXPECT_NE(e.find("%dw.folded = f32[4,4,12,64] convolution(bf16[2,19,19,12] %y.bitcast.1, "
                   "bf16[2,16,16,64] %dy), window={size=16x16}, dim_labels=f01b_i01o->01bf"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("f32[7,7,3,64] slice(f32[8,8,3,64] %dw.bitcast.1), "
                   "slice={[0:7], [0:7], [0:3], [0:64]}"),
            std::string::npos)
      << e;
  EXPECT_FALSE(Rewrite(hlo::PrintModule(r.module)).changed);  // stride 1 now: idempotent
}

TEST(PassSpaceToDepth, LeavesAloneWhatWouldNotFold) {
  // 8 channels: 32 after folding, past the folding limit (16).
  EXPECT_FALSE(Rewrite(R"(HloModule m
ENTRY %main (x: bf16[2,16,16,8], w: bf16[3,3,8,64]) -> f32[2,8,8,64] {
  %x = bf16[2,16,16,8] parameter(0)
  %w = bf16[3,3,8,64] parameter(1)
  ROOT %y = f32[2,8,8,64] convolution(%x, %w), window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f
})")
                   .changed);
  // Stride 1, and a 1x1 stride-2 kernel (a strided slice already reads only what it uses).
  EXPECT_FALSE(Rewrite(R"(HloModule m
ENTRY %main (x: bf16[2,16,16,3], w: bf16[3,3,3,64], v: bf16[1,1,3,64]) -> (f32[2,16,16,64], f32[2,8,8,64]) {
  %x = bf16[2,16,16,3] parameter(0)
  %w = bf16[3,3,3,64] parameter(1)
  %v = bf16[1,1,3,64] parameter(2)
  %a = f32[2,16,16,64] convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %b = f32[2,8,8,64] convolution(%x, %v), window={size=1x1 stride=2x2}, dim_labels=b01f_01io->b01f
  ROOT %t = (f32[2,16,16,64], f32[2,8,8,64]) tuple(%a, %b)
})")
                   .changed);
}

// Every output of `text` evaluates the same before and after the rewrite, up to f32
// summation order.
void ExpectSameValues(const std::string& text) {
  hlo::Result<hlo::HloModule> original = hlo::ParseHlo(text);
  ASSERT_TRUE(original.ok());
  const Result r = Rewrite(text);
  ASSERT_TRUE(r.changed);
  std::vector<eval::Value> args;
  for (const hlo::HloInstruction* p : original->entry()->parameters())
    args.push_back(eval::Value::Random(p->shape(), 11 + p->parameter_number()));
  auto want = eval::Evaluate(*original, args);
  auto got = eval::Evaluate(r.module, args);
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(want->size(), got->size());
  for (size_t o = 0; o < want->size(); ++o) {
    ASSERT_EQ(want->at(o).data.size(), got->at(o).data.size());
    double scale = 0, error = 0;
    for (size_t k = 0; k < want->at(o).data.size(); ++k) {
      scale = std::max(scale, std::abs(want->at(o).data[k]));
      error = std::max(error, std::abs(want->at(o).data[k] - got->at(o).data[k]));
    }
    EXPECT_GT(scale, 0.5) << "output " << o;
    EXPECT_LT(error, 1e-5 * scale) << "output " << o;
  }
}

TEST(PassSpaceToDepth, StemValuesUnchanged) { ExpectSameValues(kStem); }

// An odd image (33 pixels) under a 3x3 stride-2 window over 2 channels: the folded image
// needs 2 more rows than the padding gives.
TEST(PassSpaceToDepth, OddImageValuesUnchanged) {
  ExpectSameValues(R"(HloModule m
ENTRY %main (x: bf16[2,33,33,2], w: bf16[3,3,2,32], dy: bf16[2,17,17,32]) -> (f32[2,17,17,32], f32[3,3,2,32]) {
  %x = bf16[2,33,33,2] parameter(0)
  %w = bf16[3,3,2,32] parameter(1)
  %dy = bf16[2,17,17,32] parameter(2)
  %y = f32[2,17,17,32] convolution(%x, %w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %dw = f32[3,3,2,32] convolution(%x, %dy), window={size=17x17 pad=1_1x1_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf
  ROOT %t = (f32[2,17,17,32], f32[3,3,2,32]) tuple(%y, %dw)
})");
}

// An f32 stem at DEFAULT precision: the MXU would round X to bf16, so it is rounded once
// before folding (half the bytes to move); at HIGHEST it stays f32.
TEST(PassSpaceToDepth, F32OperandsAtDefaultPrecisionAreRoundedOnce) {
  const std::string text = R"(HloModule m
ENTRY %main (x: f32[2,32,32,3], w: f32[7,7,3,64]) -> f32[2,16,16,64] {
  %x = f32[2,32,32,3] parameter(0)
  %w = f32[7,7,3,64] parameter(1)
  ROOT %y = f32[2,16,16,64] convolution(%x, %w), window={size=7x7 stride=2x2 pad=2_3x2_3}, dim_labels=b01f_01io->b01f
})";
  const Result r = Rewrite(text);
  ASSERT_TRUE(r.changed);
  EXPECT_NE(r.entry.find("%y.convert = bf16[2,32,32,3] convert(f32[2,32,32,3] %x)"),
            std::string::npos)
      << r.entry;
  EXPECT_NE(r.entry.find("f32[8,8,3,64] pad(f32[7,7,3,64] %w"), std::string::npos)
      << r.entry;  // the kernel rounds W as it loads it
  ExpectSameValues(text);
  std::string highest = text;
  highest.insert(highest.rfind(", dim_labels"), ", operand_precision={highest,highest}");
  const Result h = Rewrite(highest);
  EXPECT_EQ(h.entry.find("convert("), std::string::npos) << h.entry;
}

}  // namespace
}  // namespace tpusim::passes
