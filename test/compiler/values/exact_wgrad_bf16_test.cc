// The weight-gradient kernel (conv_wgrad.h) on bf16 operands, as bf16 training steps hand
// it (`f01b_i01o->01bf`, f32 dW): X lands in the tiles' layout, dY lands as rows and the
// VPU transposes it. Each module is simulated with random inputs and compared with the
// reference evaluator (sim_values_util.h).
#include <gtest/gtest.h>

#include <string>

#include "test/compiler/values/sim_values_util.h"
#include "test/compiler/values/wgrad_modules.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::WeightGradModule;

TEST(ExactWeightGradBf16, OneByOneRaggedChannels) {  // 12-position lines, 10 per K tile
  ExpectMatch(
      WeightGradModule("bf16[2,12,12,130]", "bf16[2,12,12,140]", "f32[1,1,130,140]", "size=12x12"));
}

TEST(ExactWeightGradBf16, ThreeByThreeLinesWiderThanTheOutput) {  // 29-pixel lines, 27 valid
  ExpectMatch(
      WeightGradModule("bf16[1,29,29,130]", "bf16[1,27,27,6]", "f32[3,3,130,6]", "size=27x27"));
}

// More cout than cin blocks: X and dY swap roles (the kernel transposes the side with fewer
// blocks) and dW is written transposed.
// The kernel core 0 runs for `hlo`, as its header comment names it ("weight gradient ...").
std::string KernelHeader(const std::string& hlo) {
  auto c = CompileForBoard(hlo, "test.hlo",
                           driver::TargetFor(sim::LoadConfig("v3-8"), /*infeed=*/false));
  if (!c.ok()) return c.status().message();
  const std::string& program = c.value()->lowered.programs.at(0);
  const size_t at = program.find("# weight gradient");
  return at == std::string::npos ? "" : program.substr(at, program.find('\n', at) - at);
}

TEST(ExactWeightGradBf16, OneByOneExpansionComputesTheTransposedResult) {  // 1 vs 3 blocks
  EXPECT_EQ(KernelHeader(WeightGradModule("bf16[2,12,12,64]", "bf16[2,12,12,260]",
                                          "f32[1,1,64,260]", "size=12x12")),
            "# weight gradient 2x12x12x260 by 12x12x64: 1 pass "
            "(compiler/lowering/conv/conv_wgrad.cc)");  // X and dY swapped
  ExpectMatch(
      WeightGradModule("bf16[2,12,12,64]", "bf16[2,12,12,260]", "f32[1,1,64,260]", "size=12x12"));
}

TEST(ExactWeightGradBf16, OneByOneExpansionRaggedTwoMxus) {  // 2 vs 3 blocks, tiles span images
  ExpectMatch(
      WeightGradModule("bf16[5,7,7,130]", "bf16[5,7,7,300]", "f32[1,1,130,300]", "size=7x7"));
}

TEST(ExactWeightGradBf16, OneByOneTilesSpanImages) {  // 5 images of 7 lines stacked
  ExpectMatch(
      WeightGradModule("bf16[5,7,7,130]", "bf16[5,7,7,140]", "f32[1,1,130,140]", "size=7x7"));
}

TEST(ExactWeightGradBf16, StackedImagesThreeByThree) {  // 9-line images, 7 valid lines each
  ExpectMatch(
      WeightGradModule("bf16[14,9,9,20]", "bf16[14,7,7,140]", "f32[3,3,20,140]", "size=7x7"));
}

TEST(ExactWeightGradBf16, FoldedTapsPaddedAndDilated) {  // 25 taps x 6 channels: 21 + 4 taps
  ExpectMatch(WeightGradModule("bf16[2,19,19,6]", "bf16[2,9,9,200]", "f32[5,5,6,200]",
                               "size=9x9 pad=1_1x1_1 rhs_dilate=2x2"));
}

// One cout block: the two MXUs split the K tiles and add their partial sums.
TEST(ExactWeightGradBf16, OneCoutBlockSplitsTheTilesOverBothMxus) {  // 60 lines: 30 tiles
  ExpectMatch(
      WeightGradModule("bf16[2,60,60,130]", "bf16[2,60,60,64]", "f32[1,1,130,64]", "size=60x60"));
}

// Padding read in place: staged lines carry zero columns, and the first and last block of
// each image zero the rows above and below X.
TEST(ExactWeightGradBf16, PaddedOneBlockPerImage) {  // 9 lines of 11 padded pixels: 1 block
  ExpectMatch(WeightGradModule("bf16[3,9,9,130]", "bf16[3,9,9,6]", "f32[3,3,130,6]",
                               "size=9x9 pad=1_1x1_1"));
}

TEST(ExactWeightGradBf16, PaddedFirstMiddleAndLastBlocks) {  // 30 lines: blocks of 2 tiles
  ExpectMatch(WeightGradModule("bf16[2,30,30,130]", "bf16[2,30,30,140]", "f32[3,3,130,140]",
                               "size=30x30 pad=1_1x1_1"));
}

// 16 to 64 channels and up to 9 taps fold too: two taps of 64 channels per block of columns
// (ResNet's first-stage 3x3 gradients), five of 20.
TEST(ExactWeightGradBf16, SixtyFourChannelsFoldTwoTapsPerBlock) {
  ExpectMatch(WeightGradModule("bf16[2,30,30,64]", "bf16[2,30,30,64]", "f32[3,3,64,64]",
                               "size=30x30 pad=1_1x1_1"));
}

// Padded images smaller than a K tile stack, each image's rows between its zero padding
// rows (ResNet-50's stage-5 3x3 gradients: 7x7 images, 14 lines of 9 pixels per tile).
TEST(ExactWeightGradBf16, PaddedSmallImagesStack) {  // 10 images of 9 padded lines
  ExpectMatch(WeightGradModule("bf16[10,7,7,130]", "bf16[10,7,7,140]", "f32[3,3,130,140]",
                               "size=7x7 pad=1_1x1_1"));
}

TEST(ExactWeightGradBf16, PaddedSmallImagesStackShortLastBlock) {  // 25 images, uneven pads
  ExpectMatch(WeightGradModule("bf16[25,5,6,130]", "bf16[25,5,6,6]", "f32[3,3,130,6]",
                               "size=5x6 pad=2_0x2_0"));
}

TEST(ExactWeightGradBf16, PaddedUnevenly) {  // pad 2 above and left, 0 below and right
  ExpectMatch(WeightGradModule("bf16[2,20,20,130]", "bf16[2,20,20,64]", "f32[3,3,130,64]",
                               "size=20x20 pad=2_0x2_0"));
}

TEST(ExactWeightGradBf16, PaddedF32OperandsRoundedOnTheWay) {  // the f32 path, in place too
  ExpectMatch(WeightGradModule("f32[2,30,30,130]", "f32[2,30,30,6]", "f32[3,3,130,6]",
                               "size=30x30 pad=1_1x1_1"));
}

// Window dilation (the forward stride) read in place: X stages as phase images, each tap
// reads the phase of its parity.
TEST(ExactWeightGradBf16, StrideTwoThreeByThree) {  // ResNet's downsampling 3x3: pad 0_1
  ExpectMatch(WeightGradModule("bf16[2,30,30,130]", "bf16[2,15,15,140]", "f32[3,3,130,140]",
                               "size=15x15 pad=0_1x0_1 rhs_dilate=2x2"));
}

TEST(ExactWeightGradBf16, StrideTwoOneByOneSkipsTheLastLine) {  // pad 0_-1: X's odd lines unread
  ExpectMatch(WeightGradModule("bf16[2,28,28,64]", "bf16[2,14,14,130]", "f32[1,1,64,130]",
                               "size=14x14 pad=0_-1x0_-1 rhs_dilate=2x2"));
}

TEST(ExactWeightGradBf16, StrideTwoManyBlocksPaddedBothSides) {  // 60 lines, 61-pixel phases
  ExpectMatch(WeightGradModule("bf16[1,119,119,20]", "bf16[1,60,60,64]", "f32[3,3,20,64]",
                               "size=60x60 pad=1_1x1_1 rhs_dilate=2x2"));
}

}  // namespace
}  // namespace tpusim
