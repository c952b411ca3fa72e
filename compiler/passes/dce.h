// Dead code elimination: drops instructions nothing uses (unless they are a root, a parameter
// or have side effects) and computations nothing reachable from the entry calls.
#pragma once

#include "compiler/passes/pass.h"

namespace tpusim::passes {

// Collectives and random number generators, and calls/loops/conditionals whose called
// computations contain one: removing them would change what other cores or later steps see.
bool HasSideEffect(const hlo::HloInstruction& instr);

class DcePass : public HloPass {
 public:
  std::string_view name() const override { return "dce"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;
};

}  // namespace tpusim::passes
