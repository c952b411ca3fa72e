// The compiler's pass pipeline for the TensorCore: which passes run, in which order, and the
// code generator's description (target/target_description.h) handed to the passes that
// rewrite for it. Decisions XLA makes on HLO are passes here: sharding, fusion, layout,
// memory planning (docs/compiler.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/collectives/ring_estimates.h"
#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"
#include "compiler/passes/all_reduce_combiner.h"
#include "compiler/passes/layout.h"
#include "compiler/passes/memory.h"
#include "compiler/passes/pipeline.h"
#include "compiler/passes/rematerialization.h"
#include "compiler/target/target_description.h"

namespace tpusim {

struct CompileOptions {
  int64_t hbm_capacity_bytes = passes::kDefaultHbmBytes;
  int64_t devices = 1;  // the board's cores: a sharded global program is partitioned over them
  int64_t all_reduce_combine_bytes = passes::kDefaultAllReduceCombineBytes;
  std::string dump_dir;  // empty: no IR dumps
  // All-reduces as start/done pairs the collective stream overlaps with the kernels between
  // them (async-collective-creator); false: every collective runs between drain barriers.
  bool async_collectives = true;
  // The board the scheduler estimates kernel and collective times on (zeros: it keeps each
  // done as late as its users allow).
  collectives::RingCostModel ring_costs;
  // The code generator the passes prepare for; null: the TensorCore kernels
  // (lowering::TensorCoreTarget()). It outlives the pipeline.
  const target::TargetDescription* target = nullptr;
};

// batch-sharding, spmd-partitioner, async-conversion, all-reduce-combiner,
// contraction-defusion, dce, algsimp, dce,
// space-to-depth, conv-canonicalization, bf16-conversion-folding, dce, layout-assignment,
// elementwise-fusion, batch-norm-fusion, fusion-merger, multi-output-fusion, fusion-merger,
// convolution-statistics-fusion, dce, memory-scheduler, rematerialization,
// async-collective-creator, memory-planning.
passes::PassPipeline DefaultPipeline(const CompileOptions& options = {});

struct CompileReport {
  std::string hlo;                // the optimized module, printed
  passes::PaddingReport padding;  // of the optimized module; entries name their computation
  passes::MemoryPlan memory;      // from memory planning
  int64_t peak_hbm_bytes = 0;
  // What rematerialization recomputed to fit HBM (empty when the program fit as it was).
  std::vector<passes::Recomputation> recomputed;
  int64_t peak_before_recomputing = 0;  // the plan's HBM before them (0: none)
  std::vector<passes::PassLogEntry> passes;
};

// Runs DefaultPipeline(options) over `module` (optimized in place) and reports.
hlo::Result<CompileReport> CompileToHlo(hlo::HloModule& module, const CompileOptions& options = {});

}  // namespace tpusim
