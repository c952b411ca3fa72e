// Data parallelism for a program that states none: a single-replica module without shardings
// (a hand-written step, a one-device jit) has its inputs' batch split over the devices, as
// the sharding {devices=[D,1,...]<=[D]} on each input parameter (batch_analysis.h says which);
// the SPMD partitioner that runs next makes the per-device program, with the gradients'
// all-reduces. The module records the batch it split (HloModule::inferred_batch) or why it
// left the module whole (batch_not_split_reason); every device then runs all of it.
#pragma once

#include <cstdint>

#include "compiler/passes/pass.h"

namespace tpusim::spmd {

class BatchShardingPass : public passes::HloPass {
 public:
  explicit BatchShardingPass(int64_t devices) : devices_(devices) {}
  std::string_view name() const override { return "batch-sharding"; }
  // Changes the parameters' shardings only; nothing for a module with replicas, partitions,
  // shardings of its own, or one device.
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  int64_t devices_;
};

}  // namespace tpusim::spmd
