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

// `move`, a pad, concatenate or bitcast of bf16 values, moves them exactly: every
// contiguous run of a move is whole 4-byte words (an even last dimension, no padding along
// it) and a pad's value is +0, whose bits the fill writes for any type. Addresses are
// 4-byte aligned by memory planning.
bool Bf16MoveOnExactKernel(const hlo::HloInstruction& move);

}  // namespace tpusim::lowering
