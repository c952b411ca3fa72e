// Sibling multi-output fusion (XLA's MultiOutputFusion, openxla/xla
// xla/service/multi_output_fusion.h): two reduction input fusions that read a common operand
// become one fusion whose root is the tuple of both reduces, so the operand is read from HBM
// once (batch norm's sums of x and of x^2; its gradient's sums of dy and of dy * (x - mean)).
// Only pairs the target's kernel computes are merged (TargetDescription::ExactReductionFusion),
// and never two fusions of which one reads the other's result, directly or not. The readers of
// each sum read it through a get-tuple-element that keeps the old fusion's name.
#pragma once

#include "compiler/passes/pass.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

class MultiOutputFusionPass : public HloPass {
 public:
  // `target` outlives the pass.
  explicit MultiOutputFusionPass(const target::TargetDescription& target) : target_(target) {}
  std::string_view name() const override { return "multi-output-fusion"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription& target_;
};

}  // namespace tpusim::passes
