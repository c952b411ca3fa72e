// HLO ops that run exactly on the tiled VPU kernel (tile_kernel.h): elementwise ops and
// loop fusions whose operands are broadcast into the result or whose size is not a whole
// number of vregs, broadcasts, and single-operand add/max reductions of f32 values.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel for `instr`, with `op` filled (exact), or empty when the tiled kernel does not
// take it: non-f32 values, operands it cannot lay out (transposes, reshapes), or sizes
// beyond its bounds.
std::string TileOpKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
