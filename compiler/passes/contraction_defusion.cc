// Contraction defusion; see contraction_defusion.h.
#include "compiler/passes/contraction_defusion.h"

#include <algorithm>

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

bool HoldsContraction(const HloInstruction& fusion) {
  const HloComputation* f = fusion.fused_computation();
  return f && std::any_of(f->instructions().begin(), f->instructions().end(), [](const auto& i) {
           return i->opcode() == Opcode::kDot || i->opcode() == Opcode::kConvolution;
         });
}

}  // namespace

hlo::Result<bool> ContractionDefusionPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  for (HloComputation* c : KernelComputations(module)) {
    std::vector<HloInstruction*> fusions;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kFusion && HoldsContraction(*i)) fusions.push_back(i.get());
    for (HloInstruction* f : fusions) InlineInto(*c, *f, *f->fused_computation(), edits);
  }
  if (edits.empty()) return false;
  if (hlo::Status s = ApplyEdits(module, edits); !s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
