// The tiled VPU kernel (tile_kernel.h) on results of many row tiles: attention's softmax
// (row max and sum over the last dimension of [8,12,128,128], each broadcast back over its
// row), a ragged bias with a row vector, a column vector and a scalar parameter, and
// mnist-cnn's bias + ReLU. Each module is compiled for v3-8, simulated with random inputs
// and compared with the reference evaluator (sim_values_util.h).
#include <gtest/gtest.h>

#include <string>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

// Softmax over the last dimension, scaled and biased first: 12 tiles of 1024 rows.
constexpr const char* kSoftmax = R"(HloModule softmax, replica_count=8
%max.f32 (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] maximum(%x, %y)
}
%sum.f32 (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}
ENTRY %main (s: f32[8,12,128,128], mask: f32[128], scale: f32[]) -> (f32[8,12,128,128], f32[8,12,128], f32[8,12,128]) {
  %s = f32[8,12,128,128]{3,2,1,0} parameter(0)
  %mask = f32[128]{0} parameter(1)
  %scale = f32[] parameter(2)
  %scale.b = f32[8,12,128,128]{3,2,1,0} broadcast(%scale), dimensions={}
  %mask.b = f32[8,12,128,128]{3,2,1,0} broadcast(%mask), dimensions={3}
  %scaled = f32[8,12,128,128]{3,2,1,0} multiply(%s, %scale.b)
  %x = f32[8,12,128,128]{3,2,1,0} add(%scaled, %mask.b)
  %ninf = f32[] constant(-inf)
  %max = f32[8,12,128]{2,1,0} reduce(%x, %ninf), dimensions={3}, to_apply=%max.f32
  %max.b = f32[8,12,128,128]{3,2,1,0} broadcast(%max), dimensions={0,1,2}
  %shifted = f32[8,12,128,128]{3,2,1,0} subtract(%x, %max.b)
  %e = f32[8,12,128,128]{3,2,1,0} exponential(%shifted)
  %zero = f32[] constant(0)
  %sum = f32[8,12,128]{2,1,0} reduce(%e, %zero), dimensions={3}, to_apply=%sum.f32
  %sum.b = f32[8,12,128,128]{3,2,1,0} broadcast(%sum), dimensions={0,1,2}
  %p = f32[8,12,128,128]{3,2,1,0} divide(%e, %sum.b)
  ROOT %t = (f32[8,12,128,128]{3,2,1,0}, f32[8,12,128]{2,1,0}, f32[8,12,128]{2,1,0}) tuple(%p, %max, %sum)
}
)";

// 2 x 24 ragged tiles (1000 rows, 3000 columns) with a row, a column and a scalar operand.
constexpr const char* kRaggedBias = R"(HloModule bias, replica_count=8
ENTRY %main (x: f32[1000,3000], b: f32[3000], c: f32[1000], k: f32[]) -> f32[1000,3000] {
  %x = f32[1000,3000]{1,0} parameter(0)
  %b = f32[3000]{0} parameter(1)
  %c = f32[1000]{0} parameter(2)
  %k = f32[] parameter(3)
  %b.b = f32[1000,3000]{1,0} broadcast(%b), dimensions={1}
  %c.b = f32[1000,3000]{1,0} broadcast(%c), dimensions={0}
  %k.b = f32[1000,3000]{1,0} broadcast(%k), dimensions={}
  %xb = f32[1000,3000]{1,0} add(%x, %b.b)
  %xc = f32[1000,3000]{1,0} multiply(%xb, %c.b)
  ROOT %r = f32[1000,3000]{1,0} subtract(%xc, %k.b)
}
)";

// mnist-cnn's fusion.46: a bias and ReLU over f32[25,26,26,256] (34 tiles).
constexpr const char* kBiasRelu = R"(HloModule bias_relu, replica_count=8
ENTRY %main (x: f32[25,26,26,256], b: f32[256]) -> f32[25,26,26,256] {
  %x = f32[25,26,26,256]{3,2,1,0} parameter(0)
  %b = f32[256]{0} parameter(1)
  %b.b = f32[25,26,26,256]{3,2,1,0} broadcast(%b), dimensions={3}
  %y = f32[25,26,26,256]{3,2,1,0} add(%x, %b.b)
  %zero = f32[] constant(0)
  %zero.b = f32[25,26,26,256]{3,2,1,0} broadcast(%zero), dimensions={}
  ROOT %r = f32[25,26,26,256]{3,2,1,0} maximum(%y, %zero.b)
}
)";

TEST(ExactTileRows, SoftmaxOverManyRowTilesWithBroadcastRowResults) {
  testing::ExpectMatch(kSoftmax, 1e-6);
}

TEST(ExactTileRows, RaggedTilesWithRowColumnAndScalarOperands) {
  testing::ExpectMatch(kRaggedBias, 1e-6);
}

TEST(ExactTileRows, MnistBiasReluOverManyTiles) { testing::ExpectMatch(kBiasRelu, 1e-7); }

TEST(ExactTileRows, CorruptedResultIsDetected) {  // the comparison itself is a real check
  testing::ValueRun r = testing::SimulateValues(kSoftmax, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

}  // namespace
}  // namespace tpusim
