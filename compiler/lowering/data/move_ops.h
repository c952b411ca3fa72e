// HLO data movement on the strided-DMA kernel of move_kernel.h: copy, transpose, reverse,
// slice, broadcast, concatenate and pad (non-negative edges) as exact HBM -> HBM moves.
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel, with `op` filled (kind, bytes, exact); empty when the op is not one it takes
// (another opcode, elements that are not 4 or 2-byte aligned).
std::string MoveOpKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
