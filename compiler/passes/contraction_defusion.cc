// Contraction defusion; see contraction_defusion.h.
#include "compiler/passes/contraction_defusion.h"

#include <algorithm>
#include <string>
#include <unordered_map>

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

// Clones the fused computation's instructions into `c`, its parameters standing for the
// fusion's operands; the clone of its root replaces the fusion.
void Inline(HloComputation& c, HloInstruction& fusion, ModuleEdits& edits) {
  std::unordered_map<const HloInstruction*, HloInstruction*> now;
  const HloComputation& fused = *fusion.fused_computation();
  for (const auto& owned : fused.instructions()) {
    const HloInstruction& i = *owned;
    if (i.opcode() == Opcode::kParameter) {
      now[&i] = fusion.operands().at(static_cast<size_t>(i.parameter_number()));
      continue;
    }
    std::vector<HloInstruction*> ops;
    for (const HloInstruction* o : i.operands()) ops.push_back(now.at(o));
    // The root takes the fusion's name (the fusion goes), so reports name the same value.
    const std::string name = &i == fused.root() ? fusion.name() : UniqueName(c, i.name());
    now[&i] = c.AddInstruction(CloneWithOperands(i, name, ops));
  }
  edits.replace[&fusion] = now.at(fused.root());
  edits.remove.insert(&fusion);
}

}  // namespace

hlo::Result<bool> ContractionDefusionPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  for (HloComputation* c : KernelComputations(module)) {
    std::vector<HloInstruction*> fusions;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kFusion && HoldsContraction(*i)) fusions.push_back(i.get());
    for (HloInstruction* f : fusions) Inline(*c, *f, edits);
  }
  if (edits.empty()) return false;
  if (hlo::Status s = ApplyEdits(module, edits); !s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
