// A reduce over the last dimension with any reducer the VPU computes exactly: argmax and
// argmin (two arrays, value and index, as jnp.argmax writes them: the index an iota), min,
// product, bitwise and/or. Lines go into lanes as the sort kernel puts them (line r's
// element i in slot r of vreg i, by one transposing DMA per operand and chunk of columns),
// so every step folds one column of 1024 lines elementwise: the reducer's instructions run
// once per column, the accumulators staying in registers; an iota operand is a register
// counted up, never loaded. Results leave from the accumulators' slots, one per line.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel with `op` filled (exact), or empty when it does not take `instr`: another
// dimension, more than two arrays, elements other than 32-bit, an init that is not a scalar
// constant, a reducer without an exact VPU form, or a tuple result read other than by
// get-tuple-element.
std::string LineReduceKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
