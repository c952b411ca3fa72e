// Translates an elementwise HLO instruction, or the fused computation of a loop fusion,
// into the per-vreg instruction list of a VPU stream (vpu_stream.h). Operands arrive in
// v0.. in operand order; scalar constants live in v24..v30 (set once by the prologue).
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::lowering {

struct VpuBody {
  std::vector<const hlo::HloInstruction*> inputs;  // values loaded per vreg, in order
  std::vector<std::string> prologue, body;
  int result = 0;
  bool exact = true;  // every instruction maps to VPU instructions of the same semantics
  int ops = 0;        // VPU instructions per vreg
};

// `root` is computed from `leaves` (instructions outside the expression: operands of a
// fusion's parameters or of a plain elementwise op). Instructions without an exact VPU
// form are costed as the nearest VPU sequence and make the body inexact.
VpuBody BuildVpuBody(const hlo::HloInstruction& op);

// VPU instructions per input vreg of a non-elementwise op streamed by the VPU (reductions,
// pooling, batch norm, sort, ...), and whether it keeps a value per vreg.
int VpuOpsPerVreg(const hlo::HloInstruction& op);

}  // namespace tpusim::lowering
