// Mutation helpers over the public HLO IR. The IR has no API to remove instructions or to
// rewire operands, so passes describe their edits (replacements, removals, new instructions
// appended to a computation) and RebuildModule clones the module with the edits applied, in
// topological order.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"

namespace tpusim::passes {

// Distinct users of every instruction of `c`, in instruction order.
using UserMap = std::unordered_map<const hlo::HloInstruction*, std::vector<hlo::HloInstruction*>>;
UserMap ComputeUsers(const hlo::HloComputation& c);

// A name not yet used in `c`: `base` itself if free, else base.1, base.2, ...
std::string UniqueName(const hlo::HloComputation& c, std::string_view base);
// A computation name not yet used in `m`.
std::string UniqueComputationName(const hlo::HloModule& m, std::string_view base);

// A copy of `from` (opcode, shape, parameter number, literal, attributes) with a new name
// and the given operands; the caller adds it to a computation.
std::unique_ptr<hlo::HloInstruction> CloneWithOperands(
    const hlo::HloInstruction& from, std::string name,
    const std::vector<hlo::HloInstruction*>& operands);

// Computations whose instructions run as separate kernels: the entry and the computations
// of call, while and conditional (not fused computations or reducers), in module order.
std::vector<hlo::HloComputation*> KernelComputations(const hlo::HloModule& m);

// Appends a new instruction to `c` under a unique name derived from `base`.
hlo::HloInstruction* AddNew(hlo::HloComputation& c, std::string_view base, hlo::Opcode opcode,
                            hlo::Shape shape, const std::vector<hlo::HloInstruction*>& operands);

struct ModuleEdits {
  // Every use of a key (and the root, if it is one) is redirected to its value, transitively.
  std::unordered_map<const hlo::HloInstruction*, hlo::HloInstruction*> replace;
  // Dropped from their computation; nothing may still use them.
  std::unordered_set<const hlo::HloInstruction*> remove;
  std::unordered_set<const hlo::HloComputation*> remove_computations;
  bool empty() const { return replace.empty() && remove.empty() && remove_computations.empty(); }
  // Follows `replace` from `i` to the instruction that now stands for it.
  hlo::HloInstruction* Resolve(hlo::HloInstruction* i) const;
};

// Clones `callee`'s instructions (all but its parameters) into `into` under unique names, each
// parameter standing for what `param` gives for it; returns the clone of its root.
hlo::HloInstruction* CloneBody(
    const hlo::HloComputation& callee, hlo::HloComputation& into,
    const std::function<hlo::HloInstruction*(const hlo::HloInstruction& param)>& param);

// Clones `callee`'s instructions into `c`, its parameters standing for `caller`'s operands;
// the clone of its root (named as the caller) replaces the caller (a call or fusion).
void InlineInto(hlo::HloComputation& c, hlo::HloInstruction& caller,
                const hlo::HloComputation& callee, ModuleEdits& edits);

// A copy of `m` with `edits` applied: instructions in a topological order that keeps the
// original order where it can, ids renumbered, the entry computation last.
hlo::Result<hlo::HloModule> RebuildModule(const hlo::HloModule& m, const ModuleEdits& edits);

// Applies `edits` to `m` in place (via RebuildModule).
hlo::Status ApplyEdits(hlo::HloModule& m, const ModuleEdits& edits);

}  // namespace tpusim::passes
