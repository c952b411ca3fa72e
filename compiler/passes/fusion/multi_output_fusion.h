// Sibling multi-output fusion (XLA's MultiOutputFusion, openxla/xla
// xla/service/multi_output_fusion.h): two reduction input fusions that read a common operand
// become one fusion whose root is the tuple of both reduces, so the operand is read from HBM
// once (batch norm's sums of x and of x^2; its gradient's sums of dy and of dy * (x - mean)).
// Only pairs the target's kernel computes are merged (TargetDescription::ExactReductionFusion),
// and never two fusions of which one reads the other's result, directly or not. The readers of
// each sum read it through a get-tuple-element that keeps the old fusion's name.
//
// Then producer-consumer: a loop fusion read by a sums fusion and by other instructions is
// computed inside the sums fusion, which outputs its value too (its last tuple element), so
// the sums read its operands instead of reading it back: ReLU's gradient, which batch norm's
// gradient sums and its dx pass both read. Not when another operand of the sums depends on
// the producer.
//
// Then loop fusions into loop fusions: up to two loop fusions of a loop fusion's shape that it
// reads and others read too (results) are computed inside it, which outputs them as well (an
// optimizer's new moments inside its weight update), where the target computes the
// result (TargetDescription::ExactMultiOutputLoopFusion).
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
