// Memory scheduling: orders the entry computation's instructions to lower the HBM the memory
// plan needs, as XLA's ListScheduler does (openxla/xla `xla/service/hlo_memory_scheduler.cc`):
// of the instructions whose operands are computed, the next is the one that frees the most
// bytes net of what it defines (the ties in the given order); and XLA's depth-first one. As
// XLA's default memory scheduler keeps the best of its algorithms by the heap simulator's
// peak, the orders are ranked by their largest sum of live buffers, and the best is kept
// only when `PlanMemory` needs strictly less HBM with it than with the given one.
// Collectives, RNG, custom-calls and control flow keep their relative order; a module XLA
// already scheduled (`is_scheduled=true`) keeps XLA's order.
#pragma once

#include <cstdint>

#include "compiler/passes/pass.h"

namespace tpusim::passes {

class MemorySchedulerPass : public HloPass {
 public:
  std::string_view name() const override { return "memory-scheduler"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;
  // HBM the plan needed before and after (equal when the order was kept; 0 when no order
  // ranked better than the given one, so none was planned).
  int64_t peak_before() const { return before_; }
  int64_t peak_after() const { return after_; }

 private:
  int64_t before_ = 0, after_ = 0;
};

}  // namespace tpusim::passes
