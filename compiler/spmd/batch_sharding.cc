#include "compiler/spmd/batch_sharding.h"

#include <numeric>

#include "compiler/spmd/annotations.h"
#include "compiler/spmd/batch_analysis.h"

namespace tpusim::spmd {

hlo::Result<bool> BatchShardingPass::Run(hlo::HloModule& module) {
  if (devices_ < 2 || module.replica_count != 1 || module.num_partitions != 1 || !module.entry() ||
      (!IsScheduled(module) && StatesSplit(module))) {
    return false;
  }
  const BatchAnalysis a = AnalyzeBatch(module, devices_);
  module.inferred_batch = a.batch;
  module.batch_not_split_reason = a.why_not;
  if (a.batch == 0) return false;
  // What shardings the module still carries ({replicated}, or the leftovers in XLA's
  // scheduled one-device program) say nothing of how its values lie on this board.
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      auto& attrs = i->mutable_attributes();
      std::erase_if(attrs, [](const hlo::Attribute& at) { return at.key == "sharding"; });
    }
  }
  const std::vector<hlo::HloInstruction*> params = module.entry()->parameters();
  for (const hlo::HloInstruction* in : a.inputs) {
    hlo::HloSharding s;
    s.kind = hlo::HloSharding::Kind::kTiled;
    s.tile_dims.assign(in->shape().dims.size(), 1);
    s.tile_dims[0] = devices_;
    s.devices.resize(static_cast<size_t>(devices_));
    std::iota(s.devices.begin(), s.devices.end(), 0);
    for (hlo::HloInstruction* p : params) {
      if (p == in) p->SetAttr("sharding", hlo::RawText{s.ToString()});
    }
  }
  return true;
}

}  // namespace tpusim::spmd
