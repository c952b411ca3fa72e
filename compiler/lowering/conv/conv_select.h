// Which convolutions the exact MXU kernels take (conv_kernel.h, conv_wgrad.h): one predicate
// for the lowering (conv_emitter.cc) and, through the target description
// (driver/tensor_core_target.h), for the conv-canonicalization pass, which rewrites the
// convolutions it rejects into ones it accepts.
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/conv/conv_kernel.h"
#include "compiler/lowering/conv/conv_wgrad.h"

namespace tpusim::lowering {

// Where a convolution runs: MXUs per core (TPU v3: 2).
struct ConvPlacement {
  int mxus = 2;
};

// The weight-gradient kernel's shape for `conv` (HBM addresses 0, no tag): `f01b_i01o->01bf`,
// window = the output gradient's size, stride 1, one group, f32 or bf16 operands (f32 dW),
// DEFAULT precision, and a plan that fits. nullopt when the kernel does not take it.
std::optional<WeightGradShape> WeightGradShapeOf(const hlo::HloInstruction& conv,
                                                 const ConvPlacement& at);

// The implicit-GEMM kernel's shape for an NHWC convolution (batch 0, feature 3, any kernel
// layout), no dilation, one group, the same stride and padding in both spatial dimensions,
// and a plan that fits. nullopt when the kernel does not take it.
std::optional<ConvShape> ConvShapeOf(const hlo::HloInstruction& conv, const ConvPlacement& at);

// The implicit-GEMM kernel computes `conv`'s values (not only its timing): kernel layout
// `01io` or `01oi`, f32 or bf16 operands, f32 result, DEFAULT precision.
bool ConvKernelIsExact(const hlo::HloInstruction& conv);

// `conv` lowers to a kernel that computes its values.
bool OnExactConvKernel(const hlo::HloInstruction& conv, const ConvPlacement& at = {});

// The convolution of a fusion that the convolution-statistics-fusion pass builds
// (passes/fusion/conv_stats_fusion.h): a fused computation of exactly conv(param 0, param 1) and
// tuple(conv, sum(f32(conv)), sum(f32(conv)^2)), the sums f32 adds over every dimension but
// the output feature one. Null for any other fusion.
const hlo::HloInstruction* StatisticsConvolution(const hlo::HloInstruction& fusion);

// Such a fusion runs on the implicit-GEMM kernel with output statistics (a bf16 result).
bool ConvFusionOnExactKernel(const hlo::HloInstruction& fusion, const ConvPlacement& at = {});

}  // namespace tpusim::lowering
