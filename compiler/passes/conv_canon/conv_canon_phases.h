// What the rewrites that split a convolution by output phase share (input gradients of
// strided layers, dilated forward convolutions): one stride-1 convolution per pair of phases
// of the two spatial dimensions, and the phases' results interleaved into the output.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/passes/conv_canon/conv_canon_build.h"

namespace tpusim::passes {

// An NHWC convolution (`b01f_01io->b01f` or `b01f_01oi->b01f`) over two spatial dimensions:
// the form the phase rewrites take.
bool IsNhwc2d(const hlo::HloInstruction& conv);

// One output phase along one spatial dimension.
struct ConvPhase {
  int64_t outputs = 0;                // its output positions
  int64_t taps = 0;                   // taps its convolution has (0: its outputs are zeros)
  int64_t pad_low = 0, pad_high = 0;  // of its input in its convolution (may be negative)
  hlo::PadDim place;                  // its positions among the output's
};

// The stride-1 convolution of NHWC `lhs` by `kernel` for phases `py` and `px` with
// `features` outputs: the padding in its window when that is non-negative and an exact kernel
// takes it, else `lhs` cropped and padded explicitly. nullptr when no exact kernel takes it.
hlo::HloInstruction* PhaseConvolution(ConvRewriteBuilder& b, hlo::HloInstruction* lhs,
                                      hlo::HloInstruction* kernel, const ConvPhase& py,
                                      const ConvPhase& px, int64_t features);

// `phase(i, j)` (the result of phases ys[i], xs[j]) for every pair, laid into the NHWC output
// of dimensions `out`: stacked as [batch, y / sy, sy, x / sx, sx, features] (concatenates, a
// free bitcast) when every phase has taps and all of a dimension are the same size, else each
// padded into place and added; pairs without taps are zeros. ys and xs are in phase order.
// nullptr when some phase is.
hlo::HloInstruction* InterleavePhases(
    ConvRewriteBuilder& b, const std::vector<ConvPhase>& ys, const std::vector<ConvPhase>& xs,
    const std::vector<int64_t>& out,
    const std::function<hlo::HloInstruction*(size_t, size_t)>& phase);

}  // namespace tpusim::passes
