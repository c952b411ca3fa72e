// Sibling multi-output fusion; see multi_output_fusion.h.
#include "compiler/passes/multi_output_fusion.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

// A kInput fusion whose root is one reduce.
bool IsReductionFusion(const HloInstruction& i) {
  return i.opcode() == Opcode::kFusion && i.fused_computation() &&
         i.GetWord("kind").value_or("") == "kInput" &&
         i.fused_computation()->root()->opcode() == Opcode::kReduce && i.shape().IsArray();
}

bool ShareAnOperand(const HloInstruction& a, const HloInstruction& b) {
  for (const HloInstruction* x : a.operands())
    if (x->shape().IsArray() && !x->shape().IsScalar() &&
        std::find(b.operands().begin(), b.operands().end(), x) != b.operands().end())
      return true;
  return false;
}

// Whether `later` reads `earlier`'s result, directly or not: a walk back over operands that
// stops at instructions placed before `earlier`.
bool Reads(const HloInstruction& later, const HloInstruction& earlier,
           const std::unordered_map<const HloInstruction*, size_t>& pos) {
  const size_t floor = pos.at(&earlier);
  std::vector<const HloInstruction*> todo(later.operands().begin(), later.operands().end());
  std::unordered_set<const HloInstruction*> seen;
  while (!todo.empty()) {
    const HloInstruction* i = todo.back();
    todo.pop_back();
    if (i == &earlier) return true;
    auto it = pos.find(i);
    if (it == pos.end() || it->second < floor || !seen.insert(i).second) continue;
    todo.insert(todo.end(), i->operands().begin(), i->operands().end());
  }
  return false;
}

class Merger {
 public:
  Merger(hlo::HloModule& m, HloComputation& c, ModuleEdits& edits) : m_(m), c_(c), edits_(edits) {}

  // The fusion computing both `a`'s and `b`'s reduces (operands shared once), built aside.
  std::unique_ptr<HloInstruction> Build(const HloInstruction& a, const HloInstruction& b,
                                        std::unique_ptr<HloComputation>& fused) {
    fused = std::make_unique<HloComputation>(UniqueComputationName(m_, "fused_computation"));
    std::vector<HloInstruction*> operands;
    std::vector<HloInstruction*> roots;
    for (const HloInstruction* f : {&a, &b}) {
      std::unordered_map<const HloInstruction*, HloInstruction*> map;
      for (const auto& i : f->fused_computation()->instructions()) {
        if (i->opcode() == Opcode::kParameter) {
          HloInstruction* outside = f->operand(static_cast<size_t>(i->parameter_number()));
          auto at = std::find(operands.begin(), operands.end(), outside);
          if (at != operands.end()) {
            map[i.get()] = params_.at(static_cast<size_t>(at - operands.begin()));
            continue;
          }
          operands.push_back(outside);
          auto param = std::make_unique<HloInstruction>(
              "param_" + std::to_string(params_.size()), Opcode::kParameter, i->shape());
          param->set_parameter_number(static_cast<int64_t>(params_.size()));
          params_.push_back(fused->AddInstruction(std::move(param)));
          map[i.get()] = params_.back();
          continue;
        }
        std::vector<HloInstruction*> ops;
        for (const HloInstruction* o : i->operands()) ops.push_back(map.at(o));
        map[i.get()] =
            fused->AddInstruction(CloneWithOperands(*i, UniqueName(*fused, i->name()), ops));
      }
      roots.push_back(map.at(f->fused_computation()->root()));
    }
    const hlo::Shape shape = hlo::Shape::Tuple({a.shape(), b.shape()});
    auto tuple = std::make_unique<HloInstruction>("tuple", Opcode::kTuple, shape);
    for (HloInstruction* r : roots) tuple->AddOperand(r);
    fused->set_root(fused->AddInstruction(std::move(tuple)));
    auto fusion = std::make_unique<HloInstruction>(UniqueName(c_, "fusion"), Opcode::kFusion, shape);
    for (HloInstruction* o : operands) fusion->AddOperand(o);
    fusion->SetAttr("kind", hlo::Word{"kInput"});
    fusion->SetAttr("calls", hlo::ComputationRefs{{fused->name()}, {fused.get()}, false});
    params_.clear();
    return fusion;
  }

  // Replaces `a` and `b` by elements of `fusion` (kept in the module with its computation).
  void Commit(HloInstruction& a, HloInstruction& b, std::unique_ptr<HloInstruction> fusion,
              std::unique_ptr<HloComputation> fused) {
    m_.AddComputation(std::move(fused));
    HloInstruction* f = c_.AddInstruction(std::move(fusion));
    int64_t k = 0;
    for (HloInstruction* old : {&a, &b}) {
      // the sum keeps its name (buffers, reports); the old fusion goes
      auto gte = std::make_unique<HloInstruction>(old->name(), Opcode::kGetTupleElement, old->shape());
      gte->AddOperand(f);
      HloInstruction* g = c_.AddInstruction(std::move(gte));
      g->SetAttr("index", k++);
      edits_.replace[old] = g;
      edits_.remove.insert(old);
      edits_.remove_computations.insert(old->fused_computation());
    }
  }

 private:
  hlo::HloModule& m_;
  HloComputation& c_;
  ModuleEdits& edits_;
  std::vector<HloInstruction*> params_;
};

}  // namespace

hlo::Result<bool> MultiOutputFusionPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  for (HloComputation* c : KernelComputations(module)) {
    std::unordered_map<const HloInstruction*, size_t> pos;
    std::vector<HloInstruction*> candidates;
    for (const auto& i : c->instructions()) {
      pos[i.get()] = pos.size();
      if (IsReductionFusion(*i) && i.get() != c->root()) candidates.push_back(i.get());
    }
    std::unordered_set<const HloInstruction*> merged;
    Merger merger(module, *c, edits);
    for (size_t x = 0; x < candidates.size(); ++x) {
      HloInstruction& a = *candidates[x];
      if (merged.count(&a)) continue;
      for (size_t y = x + 1; y < candidates.size(); ++y) {
        HloInstruction& b = *candidates[y];
        if (merged.count(&b) || !ShareAnOperand(a, b) || Reads(b, a, pos)) continue;
        std::unique_ptr<HloComputation> fused;
        std::unique_ptr<HloInstruction> fusion = merger.Build(a, b, fused);
        if (!target_.ExactReductionFusion(*fusion)) continue;
        merger.Commit(a, b, std::move(fusion), std::move(fused));
        merged.insert(&a), merged.insert(&b);
        break;
      }
    }
  }
  if (edits.empty()) return false;
  hlo::Status s = ApplyEdits(module, edits);
  if (!s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
