// Dots on the exact kernel of exact_dot_kernel.h, from HLO.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// A dot at DEFAULT precision: f32 or bf16 operands with one contracting and one free
// dimension each (or leading dimensions that merge into one, as the row-major memory holds
// them), either of them the minor one, up to two batch dimensions (attention's [batch,
// heads] dots), f32 result. Returns the kernel with `op` filled, or empty when it does not
// take the dot (it then runs on the timing kernel).
std::string ExactDotOp(const hlo::HloInstruction& instr, const OpContext& c, LoweredOp& op);

}  // namespace tpusim::lowering
