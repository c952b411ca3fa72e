// What the fusion passes ask of a single instruction.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::passes {

// An elementwise op (unary, binary or ternary) with an array result.
bool IsElementwise(const hlo::HloInstruction& i);

// A cheap elementwise op: not one of XLA's IsExpensive ones (divisions, roots,
// transcendentals), so duplicating it into several consumers costs little.
bool IsCheap(const hlo::HloInstruction& i);

}  // namespace tpusim::passes
