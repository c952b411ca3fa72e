// Checks an HLO module: operand counts from the opcode table and shape inference for every
// supported op. Messages name the instruction, e.g. "%dot.3: lhs contracting dimension 1 has
// size 64 but rhs contracting dimension 0 has size 128".
#pragma once

#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"

namespace tpusim::hlo {

Status VerifyModule(const HloModule& module);

}  // namespace tpusim::hlo
