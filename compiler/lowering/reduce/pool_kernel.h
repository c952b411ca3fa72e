// Pooling on the VPU: reduce-window with add, max or min over the two spatial dimensions
// of NHWC f32 values (max pooling, and average pooling's sum, which XLA then divides), or
// over at most two adjacent dimensions of any f32 array, viewed as [n, h, w, c].
// Each window tap is a strided 3-D DMA from HBM into its own VMEM buffer laid out like the
// output (planes = output lines, rows = output columns, one pixel's features per row), so
// the VPU combines the taps vreg by vreg. For max and min a tap on padding reads the
// nearest edge pixel instead, which lies in the same window and leaves the result
// unchanged; for add it copies a VMEM pixel of zeros (the evaluator skips padding). A chunk
// is some output lines of one image; chunks are double-buffered and images a scalar loop,
// so the code does not grow with the batch.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel for a reduce-window `instr`, with `op` filled (exact), or empty when it does
// not take it: other combiners or element types, dilation, windows over more than two
// dimensions or two apart, a max or min window wholly in padding, or buffers beyond its
// bounds.
std::string ReduceWindowKernel(const hlo::HloInstruction& instr, const OpContext& ctx,
                               LoweredOp& op);

}  // namespace tpusim::lowering
