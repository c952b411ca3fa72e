// Max pooling (reduce-window with max over the two spatial dimensions of NHWC f32 values)
// on the VPU. Each window tap is a strided 3-D DMA from HBM into its own VMEM buffer laid
// out like the output (planes = output lines, rows = output columns, one pixel's features
// per row), so the VPU takes the max of the taps vreg by vreg. Taps that fall on padding
// read the nearest edge pixel instead, which lies in the same window and so leaves the max
// unchanged. A chunk is some output lines of one image; chunks are double-buffered and
// images a scalar loop, so the code does not grow with the batch.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/op_kernels.h"

namespace tpusim::lowering {

// The kernel for a reduce-window `instr`, with `op` filled (exact), or empty when it does
// not take it: other combiners or layouts, dilation, windows over the batch or features,
// a window wholly in padding, or buffers beyond its bounds.
std::string MaxPoolKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
