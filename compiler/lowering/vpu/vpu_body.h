// Translates an elementwise HLO instruction, or the fused computation of a loop fusion,
// into the per-vreg instruction list of a VPU stream (vpu_stream.h). Operands arrive in
// v0.. in operand order; scalar constants live in v24..v30 (set once by the prologue; past
// seven, in a temp set in the body).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::lowering {

struct VpuBody {
  std::vector<const hlo::HloInstruction*> inputs;  // values loaded per vreg, in order
  // What each input stands for in the expression: a fusion parameter (of the op, or of a
  // producer inlined into it), or the operand itself.
  std::vector<const hlo::HloInstruction*> input_locals;
  std::vector<std::string> prologue, body;
  int result = 0;
  std::vector<int> results;  // a loop fusion with a tuple root: each element's; else {result}
  bool exact = true;         // every instruction maps to VPU instructions of the same semantics
  int ops = 0;               // VPU instructions per vreg
};

// `root` is computed from `leaves` (instructions outside the expression: operands of a
// fusion's parameters or of a plain elementwise op). Instructions without an exact VPU
// form are costed as the nearest VPU sequence and make the body inexact.
// With `mapped_broadcasts`, the kernel lays every operand out at the result's positions
// (tile_kernel.h), so a broadcast of any operand is the identity and stays exact.
// Beyond `max_inputs` loaded values the body is inexact (costed only); with more than 6,
// the temps start after the inputs (v6 otherwise).
VpuBody BuildVpuBody(const hlo::HloInstruction& op, bool mapped_broadcasts = false,
                     int max_inputs = 6);

// A pred-valued elementwise op or loop fusion of parameters, constants and iotas: the VPU
// cannot store its 1-byte elements, so with mapped broadcasts each user recomputes it from
// its operands (inlined into its body).
bool InlinedIntoUsers(const hlo::HloInstruction& op);

// VPU instructions per input vreg of a non-elementwise op streamed by the VPU (reductions,
// pooling, batch norm, sort, ...), and whether it keeps a value per vreg.
int VpuOpsPerVreg(const hlo::HloInstruction& op);

// The values a reduce folds, then its reducer (to_apply: scalar parameters, a root of
// elementwise ops or a tuple of them), as VPU instructions over vregs. `values` are computed
// from instructions already in registers (`regs`: the reduce's operands, or a fused
// computation's parameters and iota) and scalar constants (`constants`: a fused parameter
// and the constant outside it stands for); broadcasts are taken as laid out already (the
// caller checks they are). The reducer reads accumulator k from accs[k] and value k from
// values[k]'s register; `results` holds the register of each root element. Temps from
// `first_temp` up, constants in v24..v30 (the prologue).
struct ReducerBody {
  std::vector<std::string> prologue, body;
  std::vector<int> results;
  bool exact = true;
};
ReducerBody BuildReducerBody(
    const std::map<const hlo::HloInstruction*, int>& regs,
    const std::map<const hlo::HloInstruction*, const hlo::HloInstruction*>& constants,
    const std::vector<const hlo::HloInstruction*>& values, const std::vector<int>& accs,
    const hlo::HloComputation& f, int first_temp);

// The elementwise expression `root` over values already in registers (`bound`: the
// instructions it starts from), as VPU instructions over vregs: temps from `first_temp`,
// scalar constants in v`first_const`..v`last_const` (set by the prologue; past those, in the
// body); results[0] holds the root's register.
ReducerBody BuildExpressionBody(const std::map<const hlo::HloInstruction*, int>& bound,
                                const hlo::HloInstruction& root, int first_temp, int first_const,
                                int last_const);

}  // namespace tpusim::lowering
