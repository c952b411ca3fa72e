// Transposed dot: a transpose that swaps a dot's free dimensions, read straight from the
// dot or through an all-reduce of it (a weight gradient JAX transposes into the weight's
// layout after data parallelism sums it), becomes the dot with its operands swapped, which
// writes the transposed result itself. XLA reaches the same bytes by layout assignment: it
// gives the dot the layout its reader needs, so the transpose is a bitcast
// (AlgebraicSimplifier's transpose-is-bitcast rule); tpusim's buffers are row-major, so the
// dot computes the transposed product instead. Runs after partitioning, before the
// all-reduce combiner.
#pragma once

#include "compiler/passes/pass.h"

namespace tpusim::passes {

class TransposedDotPass : public HloPass {
 public:
  std::string_view name() const override { return "transposed-dot"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;
};

}  // namespace tpusim::passes
