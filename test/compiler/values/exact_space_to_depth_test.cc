// space-to-depth (passes/conv_canon/space_to_depth.h) with values: the RGB stem's forward
// convolution and weight gradient, folded into stride-1 convolutions over 12 channels, run on
// v3-8 and compared with the evaluator on the unfolded module.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;

// The stem at 64x64 pixels, 4 images per core: 7x7 stride 2 with JAX's SAME padding, and
// its weight gradient; both must run on exact kernels after folding (the weight gradient of
// 3 unfolded channels has none).
TEST(ExactSpaceToDepth, StemForwardAndWeightGradient) {
  const std::string hlo = R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[4,64,64,3], w: bf16[7,7,3,64], dy: bf16[4,32,32,64]) -> (f32[4,32,32,64], f32[7,7,3,64]) {
  %x = bf16[4,64,64,3]{3,2,1,0} parameter(0)
  %w = bf16[7,7,3,64]{3,2,1,0} parameter(1)
  %dy = bf16[4,32,32,64]{3,2,1,0} parameter(2)
  %y = f32[4,32,32,64]{3,2,1,0} convolution(%x, %w), window={size=7x7 stride=2x2 pad=2_3x2_3}, dim_labels=b01f_01io->b01f
  %dw = f32[7,7,3,64]{3,2,1,0} convolution(%x, %dy), window={size=32x32 pad=2_3x2_3 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf
  ROOT %t = (f32[4,32,32,64]{3,2,1,0}, f32[7,7,3,64]{3,2,1,0}) tuple(%y, %dw)
})";
  auto c = CompileForBoard(hlo, "test.hlo",
                           driver::TargetFor(sim::LoadConfig("v3-8"), /*infeed=*/false));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const std::string& ir = c.value()->report.hlo;
  EXPECT_NE(ir.find("window={size=4x4}"), std::string::npos) << ir;
  EXPECT_NE(ir.find("bf16[4,35,35,12]"), std::string::npos) << ir;
  ExpectMatch(hlo, 1e-5);
}

}  // namespace
}  // namespace tpusim
