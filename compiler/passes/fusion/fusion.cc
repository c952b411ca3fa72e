// Elementwise fusion; see fusion.h.
#include "compiler/passes/fusion/fusion.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/fusion/fusion_ops.h"
#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::OpCategory;
using hlo::Opcode;

using Set = std::unordered_set<const HloInstruction*>;

bool IsFusibleProducer(const HloInstruction& i) {
  return IsElementwise(i) || (i.opcode() == Opcode::kBroadcast && i.shape().IsArray());
}

// A broadcast is cheap to recompute: every group that reads it gets its own copy (as XLA
// duplicates broadcasts into each consumer fusion), so the full-size value never lives in HBM.
bool IsDuplicable(const HloInstruction& i) {
  return i.opcode() == Opcode::kBroadcast && i.shape().IsArray();
}

int64_t ElementBytes(const HloInstruction& i) {
  return std::max<int64_t>(1, hlo::PrimitiveTypeBits(i.shape().type) / 8);
}

// Producers every reader recomputes, as XLA duplicates a cheap producer into each consumer
// fusion when all of them fuse it: cheap elementwise ops read by several instructions, or by
// one that is itself recomputed, all of which fuse (`fuses`) or are recomputed, whose copies
// read no more bytes per element than the value would take in HBM (a widening convert; x -
// mean over a widened bf16 x), counting what the copied producers they read read in turn and
// nothing for broadcasts, which every group copies anyway. Copying a producer never makes its
// readers' copies read more, so the walks repeat until no producer joins.
Set CheapCopies(const HloComputation& c, const UserMap& users,
                const std::function<bool(const HloInstruction&)>& fuses) {
  Set copied;
  std::unordered_map<const HloInstruction*, int64_t> reads;  // per element, by a copy
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& owned : c.instructions()) {
      const HloInstruction& i = *owned;
      if (!IsCheap(i) || &i == c.root()) continue;
      int64_t bytes = 0;
      for (const HloInstruction* o : i.operands()) {
        if (o->opcode() == Opcode::kBroadcast || o->shape().IsScalar()) continue;
        bytes += copied.count(o) ? reads.at(o) : ElementBytes(*o);
      }
      reads[&i] = bytes;
      auto it = users.find(&i);
      if (copied.count(&i) || bytes > ElementBytes(i) || it == users.end()) continue;
      const auto& u = it->second;
      auto is_copied = [&](const HloInstruction* x) { return copied.count(x) > 0; };
      if (u.size() < 2 && !std::any_of(u.begin(), u.end(), is_copied)) continue;
      if (std::all_of(u.begin(), u.end(),
                      [&](const HloInstruction* x) { return is_copied(x) || fuses(*x); }))
        copied.insert(&i), grew = true;
    }
  }
  return copied;
}

// A reduce whose reducer is not a plain add or max (argmax, min, product, logical and/or):
// its elementwise producers fuse into it (kind=kInput), as XLA fuses them, so that a
// predicate such as is-finite never needs storing. Add and max reductions keep their
// producers apart (the tiled kernel reads the reduced operand from HBM), except the sums
// over every dimension but the last (`column_sums`), offered to the target's kernel.
bool IsFusibleReduce(const HloInstruction& i, bool column_sums) {
  if (i.opcode() != Opcode::kReduce || !i.to_apply()) return false;
  const Opcode r = i.to_apply()->root()->opcode();
  if (i.operand_count() > 2 || (r != Opcode::kAdd && r != Opcode::kMaximum)) return true;
  if (!column_sums || r != Opcode::kAdd || !i.shape().IsArray() || i.shape().rank() != 1)
    return false;
  const int64_t rank = i.operand(0)->shape().rank();
  const hlo::IntList* dims = i.dimensions();
  if (rank < 2 || !dims || static_cast<int64_t>(dims->size()) != rank - 1) return false;
  for (int64_t d = 0; d < rank - 1; ++d)
    if ((*dims)[static_cast<size_t>(d)] != d) return false;
  return true;
}

using Groups = std::vector<std::vector<HloInstruction*>>;

// Groups of `c` to fuse, each listed in instruction order (root last), and the duplicated
// producers (`copied`), which may sit in several groups. `excluded` reduces start no group.
Groups FindGroups(const HloComputation& c, UserMap& users, bool column_sums, const Set& excluded,
                  Set& copied) {
  auto starts = [&](const HloInstruction& i) {
    return IsElementwise(i) || (IsFusibleReduce(i, column_sums) && !excluded.count(&i));
  };
  copied = CheapCopies(c, users, starts);
  std::unordered_map<const HloInstruction*, size_t> group_of;
  Groups groups;
  const auto& instrs = c.instructions();
  for (auto it = instrs.rbegin(); it != instrs.rend(); ++it) {
    HloInstruction* i = it->get();
    if (!group_of.count(i)) {
      // a copied producer lives in its users' groups, which read its operands
      if (!starts(*i) || copied.count(i)) continue;
      group_of[i] = groups.size();
      groups.push_back({i});
    }
    size_t g = group_of[i];
    auto& members = groups[g];
    // A copy joins with the copies it reads in turn (they read what it would have read).
    std::vector<const HloInstruction*> readers = {i};
    while (!readers.empty()) {
      const HloInstruction* r = readers.back();
      readers.pop_back();
      for (HloInstruction* p : r->operands()) {
        if (group_of.count(p) || !IsFusibleProducer(*p) || p == c.root()) continue;
        if (copied.count(p) || IsDuplicable(*p)) {
          copied.insert(p);
          if (std::find(members.begin(), members.end(), p) != members.end()) continue;
          members.push_back(p);
          readers.push_back(p);
          continue;
        }
        if (r != i || users[p].size() != 1) continue;  // fusing would compute p twice
        group_of[p] = g;
        members.push_back(p);
      }
    }
  }
  std::unordered_map<const HloInstruction*, size_t> pos;
  for (size_t k = 0; k < instrs.size(); ++k) pos[instrs[k].get()] = k;
  Groups out;
  for (auto& g : groups) {
    if (g.size() < 2) continue;
    std::sort(g.begin(), g.end(), [&](auto* a, auto* b) { return pos[a] < pos[b]; });
    out.push_back(std::move(g));
  }
  return out;
}

// The fused computation of `group` (named `name`) and the values it reads, in parameter
// order.
std::unique_ptr<HloComputation> FusedComputation(const std::vector<HloInstruction*>& group,
                                                 const std::string& name,
                                                 std::vector<HloInstruction*>& inputs) {
  Set members(group.begin(), group.end());
  auto fused = std::make_unique<HloComputation>(name);
  std::unordered_map<const HloInstruction*, HloInstruction*> inside;
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
  fused->set_root(inside.at(group.back()));
  return fused;
}

void SetFusionAttrs(HloInstruction& fusion, HloComputation* fused) {
  const bool input = fused->root()->opcode() == Opcode::kReduce;
  fusion.SetAttr("kind", hlo::Word{input ? "kInput" : "kLoop"});
  fusion.SetAttr("calls", hlo::ComputationRefs{{fused->name()}, {fused}, false});
}

// Whether the target's kernel computes the fusion `group` would become (built aside, in no
// computation).
bool TargetTakes(const target::TargetDescription& target,
                 const std::vector<HloInstruction*>& group) {
  std::vector<HloInstruction*> inputs;
  std::unique_ptr<HloComputation> fused = FusedComputation(group, "candidate", inputs);
  HloInstruction fusion("candidate", Opcode::kFusion, group.back()->shape());
  for (HloInstruction* op : inputs) fusion.AddOperand(op);
  SetFusionAttrs(fusion, fused.get());
  return target.ExactReductionFusion(fusion);
}

// Builds the fused computation and the fusion instruction for `group`, which replaces its
// root in `edits`; its members not `copied` are removed.
void Fuse(hlo::HloModule& m, HloComputation& c, const std::vector<HloInstruction*>& group,
          const Set& copied, ModuleEdits& edits) {
  std::vector<HloInstruction*> inputs;
  HloComputation* fused = m.AddComputation(
      FusedComputation(group, UniqueComputationName(m, "fused_computation"), inputs));
  HloInstruction* root = group.back();
  HloInstruction* fusion = AddNew(c, "fusion", Opcode::kFusion, root->shape(), inputs);
  SetFusionAttrs(*fusion, fused);
  edits.replace[root] = fusion;
  for (HloInstruction* i : group) {  // duplicated producers: see RemoveFullyFused
    if (i != root && !copied.count(i)) edits.remove.insert(i);
  }
}

// A duplicated producer goes once every one of its users is gone: fused into a group (each
// has its copy) or itself a duplicated producer that goes. Users follow their operands in
// instruction order, so one reverse walk decides every producer after its users.
void RemoveFullyFused(const HloComputation& c, const Groups& groups, const Set& copied,
                      UserMap& users, ModuleEdits& edits) {
  Set fused, gone;
  for (const auto& g : groups) fused.insert(g.begin(), g.end());
  for (const HloInstruction* i : fused)
    if (!copied.count(i)) gone.insert(i);
  const auto& instrs = c.instructions();
  for (auto it = instrs.rbegin(); it != instrs.rend(); ++it) {
    HloInstruction* i = it->get();
    if (!copied.count(i) || i == c.root() || !fused.count(i)) continue;
    const auto& u = users[i];
    if (std::all_of(u.begin(), u.end(), [&](HloInstruction* x) { return gone.count(x) > 0; })) {
      gone.insert(i);
      edits.remove.insert(i);
    }
  }
}

bool IsColumnSums(const HloInstruction& root) {
  return root.opcode() == Opcode::kReduce && !IsFusibleReduce(root, false);
}

}  // namespace

hlo::Result<bool> ElementwiseFusionPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  for (HloComputation* c : KernelComputations(module)) {
    UserMap users = ComputeUsers(*c);
    Set excluded, copied;
    Groups groups;
    // Sums whose fusion the target's kernel does not compute keep their producers apart: the
    // groups are found again without them.
    for (bool again = true; again;) {
      groups = FindGroups(*c, users, target_ != nullptr, excluded, copied);
      again = false;
      for (const auto& g : groups) {
        if (IsColumnSums(*g.back()) && !TargetTakes(*target_, g))
          excluded.insert(g.back()), again = true;
      }
    }
    for (const auto& group : groups) Fuse(module, *c, group, copied, edits);
    RemoveFullyFused(*c, groups, copied, users, edits);
  }
  if (edits.empty()) return false;
  hlo::Status s = ApplyEdits(module, edits);
  if (!s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
