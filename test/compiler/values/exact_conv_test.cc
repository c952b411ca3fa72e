// Convolution kernels that compute exact values (conv_kernel.h): each module is compiled
// for v3-8, simulated with random inputs and compared with the reference evaluator
// (sim_values_util.h). Sizes are small and ragged: channels not multiples of 128, odd
// spatial sizes, padding, stride 2, f32 operands rounded to bf16 on the way in.
#include <gtest/gtest.h>

#include <string>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::SimulateValues;

// One convolution `x * k -> out` with the given window and dim_labels.
std::string ConvModule(const std::string& x, const std::string& k, const std::string& out,
                       const std::string& window, const std::string& labels) {
  return "HloModule m, replica_count=8\nENTRY %main (x: " + x + ", k: " + k + ") -> " + out +
         " {\n  %x = " + x + " parameter(0)\n  %k = " + k + " parameter(1)\n  ROOT %c = " + out +
         " convolution(%x, %k), window={" + window + "}, dim_labels=" + labels + "\n}\n";
}

using testing::ExpectMatch;

TEST(ExactConv, CorruptedResultIsDetected) {  // the comparison itself is a real check
  testing::ValueRun r =
      SimulateValues(ConvModule("f32[2,9,9,5]", "f32[3,3,5,130]", "f32[2,9,9,130]",
                                "size=3x3 pad=1_1x1_1", "b01f_01io->b01f"),
                     /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

TEST(ExactConv, ForwardF32RaggedChannelsPadded) {
  ExpectMatch(ConvModule("f32[2,9,9,130]", "f32[3,3,130,5]", "f32[2,9,9,5]", "size=3x3 pad=1_1x1_1",
                         "b01f_01io->b01f"));
}

TEST(ExactConv, ForwardF32OneChannelFolded) {  // as mnist-cnn's first layer
  ExpectMatch(ConvModule("f32[2,9,9,1]", "f32[3,3,1,130]", "f32[2,7,7,130]", "size=3x3",
                         "b01f_01io->b01f"));
}

TEST(ExactConv, ForwardF32StrideTwoFolded) {
  ExpectMatch(ConvModule("f32[2,10,10,3]", "f32[3,3,3,130]", "f32[2,4,4,130]",
                         "size=3x3 stride=2x2", "b01f_01io->b01f"));
}

// 16 to 64 channels with a 01io kernel fold too: two taps fill a 128-row weight tile (cin
// 64, ResNet's first stage), three at cin 34, five at cin 20.
TEST(ExactConv, ForwardBf16SixtyFourChannelsFoldTwoTapsPerTile) {
  ExpectMatch(ConvModule("bf16[2,9,9,64]", "bf16[3,3,64,64]", "f32[2,9,9,64]",
                         "size=3x3 pad=1_1x1_1", "b01f_01io->b01f"));
}

TEST(ExactConv, ForwardBf16ThirtyFourChannelsFoldThreeTapsPerTile) {
  ExpectMatch(ConvModule("bf16[2,12,12,34]", "bf16[3,3,34,130]", "f32[2,12,12,130]",
                         "size=3x3 pad=1_1x1_1", "b01f_01io->b01f"));
}

TEST(ExactConv, ForwardF32TwentyChannelsFiveByFive) {
  ExpectMatch(ConvModule("f32[2,8,8,20]", "f32[5,5,20,7]", "f32[2,8,8,7]", "size=5x5 pad=2_2x2_2",
                         "b01f_01io->b01f"));
}

TEST(ExactConv, ForwardF32StrideTwoPadded) {
  ExpectMatch(ConvModule("f32[2,10,10,130]", "f32[3,3,130,6]", "f32[2,5,5,6]",
                         "size=3x3 stride=2x2 pad=1_1x1_1", "b01f_01io->b01f"));
}

TEST(ExactConv, ForwardBf16InputF32Kernel) {
  ExpectMatch(ConvModule("bf16[2,9,9,130]", "f32[3,3,130,6]", "f32[2,7,7,6]", "size=3x3",
                         "b01f_01io->b01f"));
}

TEST(ExactConv, ForwardBf16OutputStrideTwoPaddedHigh) {  // as conv_bn_relu.hlo's
  // f32 accumulators rounded to bf16 on the VPU before they go out (bf16 tolerance).
  ExpectMatch(ConvModule("bf16[2,12,12,64]", "bf16[3,3,64,130]", "bf16[2,6,6,130]",
                         "size=3x3 stride=2x2 pad=0_1x0_1", "b01f_01io->b01f"),
              1.0 / 256);
}

TEST(ExactConv, InputGradient01oiFullPadding) {  // as mnist-cnn's convolution.101
  ExpectMatch(ConvModule("f32[2,9,9,130]", "f32[3,3,6,130]", "f32[2,11,11,6]",
                         "size=3x3 pad=2_2x2_2", "b01f_01oi->b01f"));
}

// 01oi kernels fold as 01io ones do: each tap's [cout][cin] rows land in their columns of
// the tile, which the MXU loads transposed (ResNet's first-stage input gradients).
TEST(ExactConv, InputGradient01oiSixtyFourChannelsFoldTwoTapsPerTile) {
  ExpectMatch(ConvModule("bf16[2,9,9,64]", "bf16[3,3,64,64]", "bf16[2,9,9,64]",
                         "size=3x3 pad=1_1x1_1", "b01f_01oi->b01f"),
              1.0 / 128);
}

TEST(ExactConv, InputGradient01oiThirtyFourChannelsRaggedCout) {  // 3 taps per tile, cout 130
  ExpectMatch(ConvModule("f32[2,12,12,34]", "f32[3,3,130,34]", "f32[2,12,12,130]",
                         "size=3x3 pad=1_1x1_1", "b01f_01oi->b01f"));
}

TEST(ExactConv, InputGradient01oiOddChannels) {  // 18 channels: 7 taps per tile, f32
  ExpectMatch(ConvModule("f32[2,9,9,18]", "f32[3,3,5,18]", "f32[2,11,11,5]", "size=3x3 pad=2_2x2_2",
                         "b01f_01oi->b01f"));
}

TEST(ExactConv, ReversedKernelFeedsInputGradient) {  // reverse.100 -> convolution.101
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[2,9,9,130], k: f32[3,3,6,130]) -> f32[2,11,11,6] {
  %x = f32[2,9,9,130]{3,2,1,0} parameter(0)
  %k = f32[3,3,6,130]{3,2,1,0} parameter(1)
  %r = f32[3,3,6,130]{3,2,1,0} reverse(%k), dimensions={0,1}
  ROOT %c = f32[2,11,11,6]{3,2,1,0} convolution(%x, %r), window={size=3x3 pad=2_2x2_2}, dim_labels=b01f_01oi->b01f
})");
}

// Weight gradients: X f01b, dY i01o, window = dY's spatial size, dW 01bf.
// Input gradients of stride-2 convolutions in bf16, as ResNet's: conv-canonicalization
// splits them into phase convolutions and a pad (1x1) or concatenates (3x3), and the bf16
// folding moves the final convert onto those moves and into the phase convolutions, so the
// zero-interleaved gradient moves as bf16.
std::string Bf16InputGradient(const std::string& dy, const std::string& k, const std::string& dx,
                              const std::string& window) {
  std::string f32_dx = dx;
  f32_dx.replace(0, 4, "f32");
  return "HloModule m, replica_count=8\nENTRY %main (dy: " + dy + ", k: " + k + ") -> " + dx +
         " {\n  %dy = " + dy + " parameter(0)\n  %k = " + k + " parameter(1)\n  %c = " + f32_dx +
         " convolution(%dy, %k), window={" + window +
         "}, dim_labels=b01f_01oi->b01f\n  ROOT %r = " + dx + " convert(%c)\n}\n";
}

TEST(ExactConv, Bf16StrideTwoOneByOneInputGradientMovesBf16) {
  const std::string hlo =
      Bf16InputGradient("bf16[2,4,4,256]", "bf16[1,1,128,256]", "bf16[2,8,8,128]",
                        "size=1x1 pad=0_1x0_1 lhs_dilate=2x2");
  auto c = CompileForBoard(hlo, "test.hlo",
                           driver::TargetFor(sim::LoadConfig("v3-8"), /*infeed=*/false));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_NE(c.value()->report.hlo.find("bf16[2,8,8,128]{3,2,1,0:T(8,128)(2,1)} pad("),
            std::string::npos)
      << c.value()->report.hlo;
  ExpectMatch(hlo);
}

TEST(ExactConv, Bf16StrideTwoThreeByThreeInputGradient) {
  ExpectMatch(Bf16InputGradient("bf16[2,4,4,128]", "bf16[3,3,128,128]", "bf16[2,8,8,128]",
                                "size=3x3 pad=2_1x2_1 lhs_dilate=2x2"));
}

TEST(ExactConv, WeightGradientRaggedChannels) {  // as mnist-cnn's convolution.102
  ExpectMatch(ConvModule("f32[2,9,9,130]", "f32[2,7,7,6]", "f32[3,3,130,6]", "size=7x7",
                         "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientOneInputChannel) {  // as mnist-cnn's convolution.109
  ExpectMatch(ConvModule("f32[3,11,11,1]", "f32[3,9,9,130]", "f32[3,3,1,130]", "size=9x9",
                         "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientShortLastBlockOfLines) {  // 27 lines in blocks of 4
  ExpectMatch(ConvModule("f32[3,29,29,130]", "f32[3,27,27,6]", "f32[3,3,130,6]", "size=27x27",
                         "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientOneByOne) {  // contiguous positions: dY copied per cout block
  ExpectMatch(ConvModule("f32[2,12,12,130]", "f32[2,12,12,140]", "f32[1,1,130,140]", "size=12x12",
                         "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientBlocksOfSeveralTiles) {  // 60 lines: 5 blocks of 6 K tiles
  ExpectMatch(ConvModule("f32[2,60,60,130]", "f32[2,60,60,6]", "f32[1,1,130,6]", "size=60x60",
                         "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientManyBlocksShortLast) {  // 32 lines in 11 blocks of 3
  ExpectMatch(ConvModule("f32[2,34,34,20]", "f32[2,32,32,6]", "f32[3,3,20,6]", "size=32x32",
                         "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientOneByOneTilesSpanImages) {  // 5 images of 7 lines: 18 + 17
  ExpectMatch(ConvModule("f32[5,7,7,130]", "f32[5,7,7,140]", "f32[1,1,130,140]", "size=7x7",
                         "f01b_i01o->01bf"));
}

// Images smaller than a K tile stack: 14-line tiles of 9-line images, whole images per block.
TEST(ExactConv, WeightGradientStackedImagesOneBlock) {  // 14 images: 124 lines, 19 copies
  ExpectMatch(ConvModule("f32[14,9,9,130]", "f32[14,7,7,6]", "f32[3,3,130,6]", "size=7x7",
                         "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientStackedImagesShortLastBlock) {  // 268 lines: 126 + 126 + 16
  ExpectMatch(ConvModule("f32[30,9,9,20]", "f32[30,7,7,140]", "f32[3,3,20,140]", "size=7x7",
                         "f01b_i01o->01bf"));
}

// Beyond the accumulators (taps x cin blocks x cout blocks per MXU > 32): passes.
TEST(ExactConv, WeightGradientPassesOverCinBlocks) {  // 9 x 3 x 2 = 54: 3 passes of 1 cin block
  ExpectMatch(ConvModule("f32[2,6,6,260]", "f32[2,4,4,260]", "f32[3,3,260,260]", "size=4x4",
                         "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientPassesOverCoutBlocks) {  // 5 x 8 = 40: cout blocks 8 + 7
  ExpectMatch(ConvModule("f32[2,4,4,640]", "f32[2,4,4,1800]", "f32[1,1,640,1800]", "size=4x4",
                         "f01b_i01o->01bf"));
}

// Few input channels: taps x cin fold into the MXU's columns, padding and window dilation
// read in place.
TEST(ExactConv, WeightGradientFoldedStemOneBlock) {  // 7x7 stride 2 pad 2_3: 49 x 3 = 147
  ExpectMatch(ConvModule("f32[2,16,16,3]", "f32[2,8,8,6]", "f32[7,7,3,6]",
                         "size=8x8 pad=2_3x2_3 rhs_dilate=2x2", "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientFoldedStemClippedBlocks) {  // 63 lines: 4 blocks, short tail
  ExpectMatch(ConvModule("f32[2,126,126,3]", "f32[2,63,63,5]", "f32[7,7,3,5]",
                         "size=63x63 pad=2_3x2_3 rhs_dilate=2x2", "f01b_i01o->01bf"));
}

TEST(ExactConv, WeightGradientFoldedTapBlocksTwoMxus) {  // 25 taps x 7: blocks of 18 + 7 taps
  ExpectMatch(ConvModule("f32[2,19,19,7]", "f32[2,9,9,200]", "f32[5,5,7,200]",
                         "size=9x9 pad=1_1x1_1 rhs_dilate=2x2", "f01b_i01o->01bf"));
}

}  // namespace
}  // namespace tpusim
