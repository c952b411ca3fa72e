// Dead code elimination; see dce.h.
#include "compiler/passes/dce.h"

#include <unordered_set>
#include <vector>

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

bool OwnSideEffect(const HloInstruction& i) {
  return hlo::GetOpcodeInfo(i.opcode()).category == hlo::OpCategory::kCollective ||
         i.opcode() == Opcode::kRng || i.opcode() == Opcode::kRngBitGenerator;
}

bool ComputationHasSideEffect(const HloComputation& c,
                              std::unordered_set<const HloComputation*>& seen) {
  if (!seen.insert(&c).second) return false;
  for (const auto& i : c.instructions()) {
    if (OwnSideEffect(*i)) return true;
    for (const HloComputation* called : i->called_computations()) {
      if (called && ComputationHasSideEffect(*called, seen)) return true;
    }
  }
  return false;
}

std::unordered_set<const HloComputation*> Reachable(const hlo::HloModule& m) {
  std::unordered_set<const HloComputation*> seen;
  if (!m.entry()) return seen;
  std::vector<const HloComputation*> work{m.entry()};
  seen.insert(m.entry());
  while (!work.empty()) {
    const HloComputation* c = work.back();
    work.pop_back();
    for (const auto& i : c->instructions()) {
      for (const HloComputation* called : i->called_computations()) {
        if (called && seen.insert(called).second) work.push_back(called);
      }
    }
  }
  return seen;
}

}  // namespace

bool HasSideEffect(const HloInstruction& instr) {
  if (OwnSideEffect(instr)) return true;
  std::unordered_set<const HloComputation*> seen;
  for (const HloComputation* called : instr.called_computations()) {
    if (called && ComputationHasSideEffect(*called, seen)) return true;
  }
  return false;
}

hlo::Result<bool> DcePass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  std::unordered_set<const HloComputation*> reachable = Reachable(module);
  for (const auto& c : module.computations()) {
    if (!reachable.count(c.get())) {
      edits.remove_computations.insert(c.get());
      continue;
    }
    // Mark live instructions from the roots of liveness, then drop the rest.
    std::unordered_set<const HloInstruction*> live;
    std::vector<const HloInstruction*> work;
    auto mark = [&](const HloInstruction* i) {
      if (live.insert(i).second) work.push_back(i);
    };
    for (const auto& i : c->instructions()) {
      if (i.get() == c->root() || i->opcode() == Opcode::kParameter || HasSideEffect(*i)) {
        mark(i.get());
      }
    }
    while (!work.empty()) {
      const HloInstruction* i = work.back();
      work.pop_back();
      for (const HloInstruction* op : i->operands()) mark(op);
    }
    for (const auto& i : c->instructions()) {
      if (!live.count(i.get())) edits.remove.insert(i.get());
    }
  }
  if (edits.empty()) return false;
  hlo::Status s = ApplyEdits(module, edits);
  if (!s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
