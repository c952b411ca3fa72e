// Asynchronous collectives, as XLA runs them on a TPU: each all-reduce of the entry
// computation becomes an `all-reduce-start` / `all-reduce-done` pair, each all-gather of one
// array an `all-gather-start` (a tuple of its operand and result) / `all-gather-done` pair
// (XLA's AsyncCollectiveCreator, openxla/xla `xla/service/async_collective_creator.h`), and
// the entry is rescheduled so that the kernels between them run while the collective stream
// works (docs/collectives.md, "The collective stream"), as XLA's latency-hiding scheduler
// (`xla/service/latency_hiding_scheduler.h`) orders a step: starts as early as their
// operands allow, the work they wait for first, dones as late as their users allow (or, with
// a cost model, once the kernels after the start cover its estimated time and another start
// waits: XLA's scheduler estimates both with its latency estimator), one collective in flight
// at a time (its SchedulerConfig's all_reduce_overlap_limit and
// all_gather_overlap_limit, 1 by default). The order is kept only when the memory plan still
// fits `hbm_capacity_bytes`; otherwise each done follows its start. A module with a
// collective inside a loop, call or conditional keeps its collectives synchronous (the
// collective stream runs the entry's collectives, in order, once per step).
#pragma once

#include <cstdint>

#include "compiler/collectives/ring_estimates.h"
#include "compiler/passes/pass.h"

namespace tpusim::passes {

class AsyncCollectiveCreatorPass : public HloPass {
 public:
  // `costs`: the board the schedule estimates kernel and collective times on; without it
  // (zeros) a done waits until nothing else is ready.
  explicit AsyncCollectiveCreatorPass(int64_t hbm_capacity_bytes,
                                      collectives::RingCostModel costs = {})
      : capacity_(hbm_capacity_bytes), costs_(costs) {}
  std::string_view name() const override { return "async-collective-creator"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  int64_t capacity_;
  collectives::RingCostModel costs_;
};

}  // namespace tpusim::passes
