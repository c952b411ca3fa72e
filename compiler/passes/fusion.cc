// Elementwise fusion; see fusion.h.
#include "compiler/passes/fusion.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::OpCategory;
using hlo::Opcode;

bool IsElementwise(const HloInstruction& i) {
  OpCategory c = hlo::GetOpcodeInfo(i.opcode()).category;
  return i.shape().IsArray() &&
         (c == OpCategory::kElementwiseUnary || c == OpCategory::kElementwiseBinary ||
          c == OpCategory::kElementwiseTernary);
}

bool IsFusibleProducer(const HloInstruction& i) {
  return IsElementwise(i) || (i.opcode() == Opcode::kBroadcast && i.shape().IsArray());
}

// A broadcast is cheap to recompute: every group that reads it gets its own copy (as XLA
// duplicates broadcasts into each consumer fusion), so the full-size value never lives in HBM.
bool IsDuplicable(const HloInstruction& i) {
  return i.opcode() == Opcode::kBroadcast && i.shape().IsArray();
}

// A reduce whose reducer is not a plain add or max (argmax, min, product, logical and/or):
// its elementwise producers fuse into it (kind=kInput), as XLA fuses them, so that a
// predicate such as is-finite never needs storing. Add and max reductions keep their
// producers apart (the tiled kernel reads the reduced operand from HBM).
bool IsFusibleReduce(const HloInstruction& i) {
  if (i.opcode() != Opcode::kReduce || !i.to_apply()) return false;
  const Opcode r = i.to_apply()->root()->opcode();
  return i.operand_count() > 2 || (r != Opcode::kAdd && r != Opcode::kMaximum);
}

// Groups of `c` to fuse, each listed in instruction order (root last). Duplicable producers
// may sit in several groups and are never assigned to one.
std::vector<std::vector<HloInstruction*>> FindGroups(const HloComputation& c, UserMap& users) {
  std::unordered_map<const HloInstruction*, size_t> group_of;
  std::vector<std::vector<HloInstruction*>> groups;
  const auto& instrs = c.instructions();
  for (auto it = instrs.rbegin(); it != instrs.rend(); ++it) {
    HloInstruction* i = it->get();
    if (!group_of.count(i)) {
      if (!IsElementwise(*i) && !IsFusibleReduce(*i)) continue;
      group_of[i] = groups.size();
      groups.push_back({i});
    }
    size_t g = group_of[i];
    for (HloInstruction* p : i->operands()) {
      if (group_of.count(p) || !IsFusibleProducer(*p) || p == c.root()) continue;
      if (IsDuplicable(*p)) {
        auto& members = groups[g];
        if (std::find(members.begin(), members.end(), p) == members.end()) members.push_back(p);
        continue;
      }
      if (users[p].size() != 1) continue;  // fusing would compute p twice
      group_of[p] = g;
      groups[g].push_back(p);
    }
  }
  std::unordered_map<const HloInstruction*, size_t> pos;
  for (size_t k = 0; k < instrs.size(); ++k) pos[instrs[k].get()] = k;
  std::vector<std::vector<HloInstruction*>> out;
  for (auto& g : groups) {
    if (g.size() < 2) continue;
    std::sort(g.begin(), g.end(), [&](auto* a, auto* b) { return pos[a] < pos[b]; });
    out.push_back(std::move(g));
  }
  return out;
}

// Builds the fused computation and the fusion instruction for `group`; records the edits.
void Fuse(hlo::HloModule& m, HloComputation& c, const std::vector<HloInstruction*>& group,
          ModuleEdits& edits) {
  std::unordered_set<const HloInstruction*> members(group.begin(), group.end());
  auto* fused = m.AddComputation(
      std::make_unique<HloComputation>(UniqueComputationName(m, "fused_computation")));
  std::unordered_map<const HloInstruction*, HloInstruction*> inside;
  std::vector<HloInstruction*> inputs;
  for (HloInstruction* i : group) {
    for (HloInstruction* op : i->operands()) {
      if (members.count(op) || inside.count(op)) continue;
      int64_t n = static_cast<int64_t>(inputs.size());
      auto param = std::make_unique<HloInstruction>("param_" + std::to_string(n),
                                                    Opcode::kParameter, op->shape());
      param->set_parameter_number(n);
      inside[op] = fused->AddInstruction(std::move(param));
      inputs.push_back(op);
    }
  }
  for (HloInstruction* i : group) {
    std::vector<HloInstruction*> ops;
    for (HloInstruction* op : i->operands()) ops.push_back(inside.at(op));
    inside[i] = fused->AddInstruction(CloneWithOperands(*i, UniqueName(*fused, i->name()), ops));
  }
  HloInstruction* root = group.back();
  fused->set_root(inside.at(root));
  HloInstruction* fusion = AddNew(c, "fusion", Opcode::kFusion, root->shape(), inputs);
  fusion->SetAttr("kind", hlo::Word{root->opcode() == Opcode::kReduce ? "kInput" : "kLoop"});
  fusion->SetAttr("calls", hlo::ComputationRefs{{fused->name()}, {fused}, false});
  edits.replace[root] = fusion;
  for (HloInstruction* i : group) {  // duplicated broadcasts: see RemoveFullyFused
    if (i != root && !IsDuplicable(*i)) edits.remove.insert(i);
  }
}

// A duplicated broadcast goes once every one of its users was fused (each has its copy).
void RemoveFullyFused(const HloComputation& c,
                      const std::vector<std::vector<HloInstruction*>>& groups, UserMap& users,
                      ModuleEdits& edits) {
  std::unordered_set<const HloInstruction*> fused;
  for (const auto& g : groups) fused.insert(g.begin(), g.end());
  for (const HloInstruction* i : fused) {
    if (!IsDuplicable(*i) || i == c.root()) continue;
    const auto& u = users[i];
    if (std::all_of(u.begin(), u.end(), [&](HloInstruction* x) { return fused.count(x) > 0; }))
      edits.remove.insert(i);
  }
}

}  // namespace

hlo::Result<bool> ElementwiseFusionPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  for (HloComputation* c : KernelComputations(module)) {
    UserMap users = ComputeUsers(*c);
    const auto groups = FindGroups(*c, users);
    for (const auto& group : groups) Fuse(module, *c, group, edits);
    RemoveFullyFused(*c, groups, users, edits);
  }
  if (edits.empty()) return false;
  hlo::Status s = ApplyEdits(module, edits);
  if (!s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
