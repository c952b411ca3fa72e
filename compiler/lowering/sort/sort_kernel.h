// Sort along the last dimension on the VPU (sort_network.h): lines of f32 or s32 keys with
// any 32-bit values beside them (the key-value tuple form), comparator LT or GT on one
// operand, stable. Groups of up to 1024 lines come into VMEM transposed by strided DMA
// (line r's element i into slot r of vreg i), padded to a power of two with keys that sort
// last, run through the bitonic network and go back the same way.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel for a sort `instr`, with `op` filled (exact), or empty when it does not take
// it: another comparator or dimension, other element types, lines longer than VMEM holds
// (arrays x padded length <= 4096 vregs), or a tuple result read other than by
// get-tuple-element.
std::string SortKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
