// Async conversion: XLA's asynchronous pairs as optimized dumps hold them become the
// synchronous ops tpusim runs (between drain barriers: a collective does not overlap the
// kernels around it here). all-reduce-start/done -> all-reduce; all-gather-start/done ->
// all-gather; collective-permute-start/done -> collective-permute; copy-start/done (a
// prefetch between memory spaces) -> copy. A start's tuple, where something other than its
// done reads it, is rebuilt from the operand and the new op.
#pragma once

#include "compiler/passes/pass.h"

namespace tpusim::passes {

class AsyncConversionPass : public HloPass {
 public:
  std::string_view name() const override { return "async-conversion"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;
};

}  // namespace tpusim::passes
