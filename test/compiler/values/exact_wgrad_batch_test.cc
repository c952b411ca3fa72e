// The weight-gradient kernel that contracts over the batch (conv_wgrad_batch.h): 128-image
// K tiles at one output-gradient pixel, taps in the padding skipped. Each module is
// simulated with random inputs and compared with the reference evaluator; the last one
// checks that ResNet-50's 7x7 stage keeps its MXUs busy with the model's work only.
#include <gtest/gtest.h>

#include <string>

#include "test/compiler/values/sim_values_util.h"
#include "test/compiler/values/wgrad_modules.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::WeightGradModule;

// The kernel core 0 runs for the module's only op.
std::string Program(const std::string& hlo) {
  bool exact = false;
  std::string inexact;
  const auto c = testing::CompileForValues(hlo, sim::LoadConfig("v3-8"), exact, inexact);
  return c ? c->lowered.programs.at(0) : "";
}

constexpr const char* kBatchKernel = "contracting over the batch";

TEST(ExactWeightGradBatch, ThreeByThreeOverSmallImages) {  // two cout blocks, one per MXU
  const std::string m = WeightGradModule("bf16[128,4,4,128]", "bf16[128,4,4,256]",
                                         "f32[3,3,128,256]", "size=4x4 pad=1_1x1_1");
  EXPECT_NE(Program(m).find(kBatchKernel), std::string::npos);
  ExpectMatch(m);
}

TEST(ExactWeightGradBatch, OneCoutBlockSplitsThePixelsOverBothMxus) {  // partial sums added
  const std::string m = WeightGradModule("bf16[128,5,5,128]", "bf16[128,5,5,128]",
                                         "f32[3,3,128,128]", "size=5x5 pad=1_1x1_1");
  EXPECT_NE(Program(m).find("pixels split over the MXUs"), std::string::npos);
  ExpectMatch(m);
}

// ResNet's downsampling 3x3: window dilation 2, padded below and right only.
TEST(ExactWeightGradBatch, StrideTwoReadsEveryOtherPixel) {
  ExpectMatch(WeightGradModule("bf16[128,8,8,128]", "bf16[128,4,4,256]", "f32[3,3,128,256]",
                               "size=4x4 pad=0_1x0_1 rhs_dilate=2x2"));
}

// 256 images (two K tiles per pixel); 3 x 3 channel blocks: a pass of two cout blocks, then
// one of a single block with the pixels split.
TEST(ExactWeightGradBatch, TwoImageBlocksInTwoPasses) {
  const std::string m = WeightGradModule("bf16[256,3,3,384]", "bf16[256,3,3,384]",
                                         "f32[3,3,384,384]", "size=3x3 pad=1_1x1_1");
  const std::string isa = Program(m);
  EXPECT_NE(isa.find("contracting over the batch: 2 passes"), std::string::npos);
  EXPECT_NE(isa.find("pixels split over the MXUs"), std::string::npos);
  ExpectMatch(m);
}

// ResNet-50's last stage at 128 images per core: 7x7 images, 512 channels, 3x3. The MXUs
// execute the taps inside the image only: 2 * 128 * 19 * 19 * 512 * 512 flops (19 of the 21
// tap-line pairs of each dimension), 739,328 cycles of a 128x128 array over both MXUs, plus
// zeroing the accumulators (per MXU four passes of 18 regions of 128 rows, 9,216 cycles); the
// kernel finishes within 25% of half the model's cycles at 940 MHz (the position kernel took
// 2.8x). Release only: the evaluator's 30 GFLOP per replica (.ci/run).
TEST(ExactWeightGradBatch, ResNetsLastStageRunsAtTheMxusPeak) {
  const std::string m = WeightGradModule("bf16[128,7,7,512]", "bf16[128,7,7,512]",
                                         "f32[3,3,512,512]", "size=7x7 pad=1_1x1_1");
  const testing::ValueRun r = testing::SimulateValues(m);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_LT(r.error, 1e-5);
  const double cycles = 2.0 * 128 * 19 * 19 * 512 * 512 / (2.0 * 128 * 128);
  const double zeroing = 2.0 * 4 * 18 * 128;          // both MXUs: 4 passes x 18 regions x 128 rows
  const double busy_us = (cycles + zeroing) / 940.0;  // summed over both MXUs
  EXPECT_NEAR(r.mxu_busy_us, busy_us, busy_us * 0.01);
  EXPECT_LT(r.time_us, 1.25 * cycles / 940.0 / 2);
}

}  // namespace
}  // namespace tpusim
