// Fusion merging (XLA's FusionMerger, openxla/xla xla/service/gpu/transforms/fusion_merger.h):
// a loop fusion whose every user is a loop or input fusion is computed inside each of them and
// disappears, when that moves no more HBM bytes than writing it once and reading it back in
// every user (its operands count once per user that does not read them already). Then XLA's
// duplication of cheap producers (InstructionFusion, may_duplicate): a loop fusion of cheap
// elementwise ops is copied into each loop or input fusion that reads it and already reads
// enough of its operands that the copy adds no more bytes than it saves; it stays for its
// other users. Batch norm's gradient then recomputes ReLU's mask from the convolution output
// x, which its sums and dx pass read anyway, instead of reading ReLU's output and writing the
// masked gradient between them. Every merged fusion must be one the target computes
// (TargetDescription::ExactReductionFusion, ExactLoopFusion).
#pragma once

#include "compiler/passes/pass.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

class FusionMergerPass : public HloPass {
 public:
  // `target` outlives the pass.
  explicit FusionMergerPass(const target::TargetDescription& target) : target_(target) {}
  std::string_view name() const override { return "fusion-merger"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription& target_;
};

}  // namespace tpusim::passes
