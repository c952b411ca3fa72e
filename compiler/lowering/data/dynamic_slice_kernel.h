// dynamic-slice and dynamic-update-slice of 32-bit elements with start indices computed at
// run time (s32 scalars, XLA's form): the starts come into SMEM by DMA (a constant start is
// an immediate), the sequencer clamps each one as XLA does (to [0, dim - size]) and sums
// start x stride into a byte offset in a register, and the block moves by strided DMA
// (move_kernel.h) from or to that offset. dynamic-update-slice first copies the operand
// into its result unless they share a buffer, waits, then writes the update.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel with `op` filled; empty when the op is not one of these forms (elements that
// are not 32-bit, a vector of start indices, a block the DMA descriptors cannot shape).
std::string DynamicSliceKernel(const hlo::HloInstruction& instr, const OpContext& ctx,
                               LoweredOp& op);

}  // namespace tpusim::lowering
