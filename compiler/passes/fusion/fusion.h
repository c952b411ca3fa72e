// Elementwise (loop) fusion: chains of elementwise ops, with the broadcasts and converts that
// feed them, become one `fusion` instruction (kind=kLoop) calling a fused computation, so the
// intermediate values never go to HBM. A reduce whose reducer is not a plain add or max
// (argmax, min, product, and, or) takes its elementwise producers in the same way
// (kind=kInput): jnp.all(jnp.isfinite(g)) then never stores a predicate.
//
// Fusion goes producer into consumer: a group starts at an elementwise op and pulls in each
// operand that is elementwise or a broadcast and has that group member as its only user, so
// no work is duplicated, except for cheap producers every group copies: broadcasts, and
// cheap elementwise ops whose every user fuses and whose copies read no more bytes than the
// value would take, as a widening convert (XLA duplicates such producers into each consumer
// fusion, so the value never lives in HBM). Groups of one instruction are left alone. The entry
// computation and the computations of call, while and conditional are fused; reducers and fused
// computations are not.
#pragma once

#include "compiler/passes/pass.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

class ElementwiseFusionPass : public HloPass {
 public:
  // `target` (may be null: no add-reduction fusions) outlives the pass.
  explicit ElementwiseFusionPass(const target::TargetDescription* target = nullptr)
      : target_(target) {}
  std::string_view name() const override { return "elementwise-fusion"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription* target_;
};

}  // namespace tpusim::passes
