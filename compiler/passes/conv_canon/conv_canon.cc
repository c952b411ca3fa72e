// The conv-canonicalization driver: finds the convolutions no exact kernel takes, tries each
// rewrite on a scratch computation first, and applies the first that works.
#include "compiler/passes/conv_canon/conv_canon.h"

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;

using Rewrite = HloInstruction* (*)(const HloInstruction&, ConvRewriteBuilder&);

// The rewrite that applies to `conv`, or nullptr. A rewrite that gives up half-way leaves
// instructions behind, so each is tried on a scratch computation (operands still point at
// the real ones) and only then built for real.
Rewrite ChooseRewrite(const HloInstruction& conv, const target::TargetDescription& kernels) {
  for (Rewrite r : {&RewriteNarrowWeightGrad, &RewriteWeightGrad, &RewriteInputGrad,
                    &RewriteDilatedConv, &RewriteGroupedConv}) {
    hlo::HloComputation scratch("scratch");
    ConvRewriteBuilder trial(scratch, conv, kernels);
    if (r(conv, trial)) return r;
  }
  return nullptr;
}

}  // namespace

hlo::Result<bool> ConvCanonicalizationPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  for (const auto& c : module.computations()) {
    // Index loop: rewrites append instructions to the computation.
    const size_t count = c->instructions().size();
    for (size_t k = 0; k < count; ++k) {
      HloInstruction& conv = *c->instructions()[k];
      if (conv.opcode() != hlo::Opcode::kConvolution || conv.operand_count() != 2 ||
          !conv.shape().IsArray() || target_.ExactConvolution(conv))
        continue;
      Rewrite rewrite = ChooseRewrite(conv, target_);
      if (!rewrite) continue;
      ConvRewriteBuilder build(*c, conv, target_);
      HloInstruction* value = rewrite(conv, build);
      if (!value)
        return hlo::Status::Error("%" + conv.name() + ": rewrite failed on its second build");
      edits.replace[&conv] = value;
    }
  }
  if (edits.empty()) return false;
  if (hlo::Status s = ApplyEdits(module, edits); !s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
