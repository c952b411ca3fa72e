// Small convolutions of ResNet-50's kinds (real kernel sizes, strides and paddings, small
// batch, spatial size and channels) that no exact kernel takes as written: the cases of the
// conv-canonicalization tests.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tpusim::testing {

struct ConvCase {
  std::string name;
  std::string lhs, rhs, out, window, labels;
  int groups = 1, batch_groups = 1;  // feature_group_count, batch_group_count
  std::string Module() const {
    return "HloModule m, replica_count=8\nENTRY %main (x: " + lhs + ", k: " + rhs + ") -> " + out +
           " {\n  %x = " + lhs + " parameter(0)\n  %k = " + rhs +
           " parameter(1)\n  ROOT %c = " + out + " convolution(%x, %k), window={" + window +
           "}, dim_labels=" + labels +
           (groups > 1 ? ", feature_group_count=" + std::to_string(groups) : "") +
           (batch_groups > 1 ? ", batch_group_count=" + std::to_string(batch_groups) : "") +
           "\n}\n";
  }
};

// gtest names a parameter by this instead of its bytes.
inline void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

// Weight gradients (X f01b, dY i01o -> dW 01bf; 16 input channels, the fewest the kernel
// does not fold: with fewer it takes padding and dilation itself) and input gradients (dY b01f, W
// 01oi -> dX; 18 channels: the implicit-GEMM kernel takes a 01oi kernel of fewer only for 1x1).
inline const std::vector<ConvCase>& ConvCases() {
  static const std::vector<ConvCase> cases = {
      {"WgradThreeByThreePadOne", "f32[2,8,8,16]", "f32[2,8,8,6]", "f32[3,3,16,6]",
       "size=8x8 pad=1_1x1_1", "f01b_i01o->01bf"},
      {"WgradThreeByThreeStrideTwoSame", "f32[2,8,8,16]", "f32[2,4,4,6]", "f32[3,3,16,6]",
       "size=4x4 pad=0_1x0_1 rhs_dilate=2x2", "f01b_i01o->01bf"},
      {"WgradThreeByThreeStrideTwoPadOne", "f32[2,9,9,16]", "f32[2,5,5,6]", "f32[3,3,16,6]",
       "size=5x5 pad=1_1x1_1 rhs_dilate=2x2", "f01b_i01o->01bf"},
      {"WgradSevenBySevenStrideTwo", "f32[2,16,16,16]", "f32[2,8,8,6]", "f32[7,7,16,6]",
       "size=8x8 pad=2_3x2_3 rhs_dilate=2x2", "f01b_i01o->01bf"},
      {"WgradOneByOneStrideTwo", "f32[2,8,8,16]", "f32[2,4,4,6]", "f32[1,1,16,6]",
       "size=4x4 pad=0_-1x0_-1 rhs_dilate=2x2", "f01b_i01o->01bf"},
      // JAX's bf16 models ask for bf16 weight gradients: f32 convolutions, rounded once
      // (whole vregs of dW: the VPU's bf16 stores round exactly on those).
      {"WgradBf16ResultPadOne", "bf16[2,8,8,16]", "bf16[2,8,8,64]", "bf16[3,3,16,64]",
       "size=8x8 pad=1_1x1_1", "f01b_i01o->01bf"},
      {"WgradBf16ResultStrideTwoSame", "bf16[2,8,8,16]", "bf16[2,4,4,64]", "bf16[3,3,16,64]",
       "size=4x4 pad=0_1x0_1 rhs_dilate=2x2", "f01b_i01o->01bf"},
      {"DgradOneByOneStrideTwo", "f32[2,4,4,18]", "f32[1,1,5,18]", "f32[2,8,8,5]",
       "size=1x1 pad=0_1x0_1 lhs_dilate=2x2", "b01f_01oi->b01f"},
      {"DgradThreeByThreeStrideTwoSame", "f32[2,4,4,18]", "f32[3,3,5,18]", "f32[2,8,8,5]",
       "size=3x3 pad=2_1x2_1 lhs_dilate=2x2", "b01f_01oi->b01f"},
      {"DgradThreeByThreeStrideTwo01io", "f32[2,4,4,18]", "f32[3,3,18,5]", "f32[2,8,8,5]",
       "size=3x3 pad=2_1x2_1 lhs_dilate=2x2", "b01f_01io->b01f"},
      {"DgradThreeByThreeStrideTwoPadOne", "f32[2,5,5,18]", "f32[3,3,5,18]", "f32[2,9,9,5]",
       "size=3x3 pad=1_1x1_1 lhs_dilate=2x2", "b01f_01oi->b01f"},
      {"DgradSevenBySevenStrideTwoPadThree", "f32[2,8,8,18]", "f32[7,7,5,18]", "f32[2,16,16,5]",
       "size=7x7 pad=3_4x3_4 lhs_dilate=2x2", "b01f_01oi->b01f"},
      // Dilated (atrous) forward convolutions, DeepLab's kind: phases of one size (stacked),
      // of unequal sizes and different dilations per dimension (padded into place and
      // added), a 01oi kernel with a dilation wider than the phases' outputs.
      {"AtrousThreeByThreeDilationTwoSame", "f32[2,8,8,16]", "f32[3,3,16,8]", "f32[2,8,8,8]",
       "size=3x3 pad=2_2x2_2 rhs_dilate=2x2", "b01f_01io->b01f"},
      {"AtrousDilationsThreeAndTwoValid", "f32[2,11,10,16]", "f32[3,3,16,8]", "f32[2,5,6,8]",
       "size=3x3 rhs_dilate=3x2", "b01f_01io->b01f"},
      {"AtrousDilationFour01oi", "f32[2,7,7,18]", "f32[3,3,8,18]", "f32[2,7,7,8]",
       "size=3x3 pad=4_4x4_4 rhs_dilate=4x4", "b01f_01oi->b01f"},
      // Grouped convolutions: four groups of 4 channels (ResNeXt's kind), depthwise with two
      // outputs per channel, and EfficientNet's stride-2 depthwise over 144 channels (TF's SAME
      // padding; two chunks of 72).
      {"GroupedFourGroupsOfFour", "f32[2,8,8,16]", "f32[3,3,4,8]", "f32[2,8,8,8]",
       "size=3x3 pad=1_1x1_1", "b01f_01io->b01f", 4},
      {"DepthwiseMultiplierTwo", "f32[2,8,8,16]", "f32[3,3,1,32]", "f32[2,8,8,32]",
       "size=3x3 pad=1_1x1_1", "b01f_01io->b01f", 16},
      {"DepthwiseStrideTwo144Channels", "f32[2,8,8,144]", "f32[3,3,1,144]", "f32[2,4,4,144]",
       "size=3x3 stride=2x2 pad=0_1x0_1", "b01f_01io->b01f", 144},
      // Their gradients as JAX writes them: the kernel's by batch groups (a depthwise layer
      // with two outputs per channel, and a stride-2 one: padding and window dilation then
      // go through the weight-gradient rewrites), the input's by feature groups of a 01oi
      // kernel.
      {"DepthwiseWeightGradPadOne", "f32[2,8,8,16]", "f32[2,8,8,32]", "f32[3,3,1,32]",
       "size=8x8 pad=1_1x1_1", "f01b_i01o->01bf", 1, 16},
      {"DepthwiseWeightGradStrideTwo", "f32[2,8,8,16]", "f32[2,4,4,16]", "f32[3,3,1,16]",
       "size=4x4 pad=0_1x0_1 rhs_dilate=2x2", "f01b_i01o->01bf", 1, 16},
      {"GroupedInputGrad01oi", "f32[2,8,8,32]", "f32[3,3,16,2]", "f32[2,8,8,16]",
       "size=3x3 pad=1_1x1_1", "b01f_01oi->b01f", 16},
  };
  return cases;
}

}  // namespace tpusim::testing
