// SPMD partitioning, as XLA's SpmdPartitioner does it: a global program whose values carry
// shardings (`sharding=` attributes, Shardy's xla.sdy.* annotations, shard_map's manual
// regions) becomes one per-device program (num_partitions = devices) with per-device shapes
// and explicit collectives. It runs first in the pipeline, so layout, fusion, memory planning
// and code generation see one device's program. Strategies (docs/spmd.md):
//  - tiled values stay tiled through elementwise ops, broadcasts, transposes, reshapes that
//    keep the tiled dimension, dots and convolutions split along a free (batch) dimension, and
//    reduces (over a tiled dimension: a local reduce, then an all-reduce by the same
//    reducer); dots and convolutions that contract a dimension tiled alike in both operands
//    compute partial sums, all-reduced;
//  - shard_map bodies run as written on each device's shard;
//  - any other op runs replicated on operands all-gathered whole (always correct), and a
//    replicated value enters a tiled one by each device's dynamic slice.
#pragma once

#include <cstdint>

#include "compiler/passes/pass.h"

namespace tpusim::spmd {

class SpmdPartitionerPass : public passes::HloPass {
 public:
  explicit SpmdPartitionerPass(int64_t devices) : devices_(devices) {}
  std::string_view name() const override { return "spmd-partitioner"; }
  // Changes nothing in a module without shardings, with replicas, or already per-device
  // (XLA's scheduled output).
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  int64_t devices_;
};

// Whether `module` is a global program that carries shardings to partition over `devices`.
bool HasShardings(const hlo::HloModule& module, int64_t devices);

}  // namespace tpusim::spmd
