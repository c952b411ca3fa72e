// FLOPs of HLO instructions counted as XLA's HloCostAnalysis counts them (openxla/xla
// xla/service/hlo_cost_analysis.cc), the figure XProf's op profile shows and the one real
// TPU step times are compared against (docs/fidelity.md): a dot or convolution is 2 FLOPs
// per multiply-add of the model (padding, taps on padding and on lhs-dilation holes not
// counted); an elementwise op 1 per result element, transcendentals (exp, log, tanh, ...)
// apart; reductions their reducer's cost per reduced element; data movement nothing.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::analysis {

struct OpCost {
  double flops = 0;
  double transcendentals = 0;
  OpCost& operator+=(const OpCost& o) {
    flops += o.flops, transcendentals += o.transcendentals;
    return *this;
  }
};

// One execution of `instr` on the device that runs it. A while counts one trip of its
// body and condition, a conditional its costliest branch, a call or fusion its
// computation, as XLA does.
OpCost CostOf(const hlo::HloInstruction& instr);

// Every instruction of `comp`, summed.
OpCost CostOf(const hlo::HloComputation& comp);

}  // namespace tpusim::analysis
