// Sibling multi-output fusion; see multi_output_fusion.h.
#include "compiler/passes/fusion/multi_output_fusion.h"

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

  // One fusion computing `fusions` (operands shared once; a fusion that a later one reads is
  // computed inside it), built aside: its root is the tuple of `outputs`' results in order
  // (a tuple-valued fusion's elements one by one).
  std::unique_ptr<HloInstruction> Build(const std::vector<const HloInstruction*>& fusions,
                                        const std::vector<const HloInstruction*>& outputs,
                                        std::unique_ptr<HloComputation>& fused) {
    fused = std::make_unique<HloComputation>(UniqueComputationName(m_, "fused_computation"));
    std::vector<HloInstruction*> operands, params;
    std::unordered_map<const HloInstruction*, HloInstruction*> root_of;  // fusion -> clone
    for (const HloInstruction* f : fusions) {
      root_of[f] = CloneBody(*f->fused_computation(), *fused, [&](const HloInstruction& q) {
        HloInstruction* outside = f->operand(static_cast<size_t>(q.parameter_number()));
        if (root_of.count(outside)) return root_of.at(outside);
        auto at = std::find(operands.begin(), operands.end(), outside);
        if (at != operands.end()) return params.at(static_cast<size_t>(at - operands.begin()));
        operands.push_back(outside);
        auto param = std::make_unique<HloInstruction>("param_" + std::to_string(params.size()),
                                                      Opcode::kParameter, q.shape());
        param->set_parameter_number(static_cast<int64_t>(params.size()));
        params.push_back(fused->AddInstruction(std::move(param)));
        return params.back();
      });
    }
    std::vector<HloInstruction*> elements;
    for (const HloInstruction* f : outputs) {
      HloInstruction* r = root_of.at(f);
      if (r->opcode() == Opcode::kTuple) {
        elements.insert(elements.end(), r->operands().begin(), r->operands().end());
      } else {
        elements.push_back(r);
      }
    }
    std::vector<hlo::Shape> shapes;
    for (const HloInstruction* e : elements) shapes.push_back(e->shape());
    const hlo::Shape shape = hlo::Shape::Tuple(shapes);
    auto tuple =
        std::make_unique<HloInstruction>(UniqueName(*fused, "tuple"), Opcode::kTuple, shape);
    for (HloInstruction* e : elements) tuple->AddOperand(e);
    fused->set_root(fused->AddInstruction(std::move(tuple)));
    auto fusion =
        std::make_unique<HloInstruction>(UniqueName(c_, "fusion"), Opcode::kFusion, shape);
    for (HloInstruction* o : operands) fusion->AddOperand(o);
    fusion->SetAttr("kind", hlo::Word{"kInput"});
    fusion->SetAttr("calls", hlo::ComputationRefs{{fused->name()}, {fused.get()}, false});
    return fusion;
  }

  // Adds `fusion` (and its computation) to the computation.
  HloInstruction* Add(std::unique_ptr<HloInstruction> fusion,
                      std::unique_ptr<HloComputation> fused) {
    m_.AddComputation(std::move(fused));
    return c_.AddInstruction(std::move(fusion));
  }

  // `old` replaced by element `k` of `f`, read under old's name (buffers, reports).
  void Replace(HloInstruction& old, HloInstruction* f, int64_t k) {
    auto gte = std::make_unique<HloInstruction>(old.name(), Opcode::kGetTupleElement, old.shape());
    gte->AddOperand(f);
    HloInstruction* g = c_.AddInstruction(std::move(gte));
    g->SetAttr("index", k);
    edits_.replace[&old] = g;
    edits_.remove.insert(&old);
  }

  // `old`, a fusion now computed inside another, goes with its computation.
  void Drop(HloInstruction& old) {
    edits_.remove.insert(&old);
    edits_.remove_computations.insert(old.fused_computation());
  }

 private:
  hlo::HloModule& m_;
  HloComputation& c_;
  ModuleEdits& edits_;
};

}  // namespace

namespace {

// A reduction fusion whose root is a reduce or a tuple of them.
bool IsSumsFusion(const HloInstruction& i) {
  if (i.opcode() != Opcode::kFusion || !i.fused_computation() ||
      i.GetWord("kind").value_or("") != "kInput")
    return false;
  const HloInstruction* root = i.fused_computation()->root();
  if (root->opcode() == Opcode::kReduce) return true;
  if (root->opcode() != Opcode::kTuple) return false;
  for (const HloInstruction* o : root->operands())
    if (o->opcode() != Opcode::kReduce) return false;
  return true;
}

bool IsLoopFusion(const HloInstruction& i) {
  return i.opcode() == Opcode::kFusion && i.fused_computation() &&
         i.GetWord("kind").value_or("") == "kLoop" && i.shape().IsArray();
}

// Siblings: reduction fusions that share an operand, grouped while the target's kernel
// computes the group (batch norm's gradient in flax's form sums dy, dy (x - mean) and -dy c).
void MergeSiblings(hlo::HloModule& module, HloComputation& c,
                   const target::TargetDescription& target, ModuleEdits& edits) {
  std::unordered_map<const HloInstruction*, size_t> pos;
  std::vector<HloInstruction*> candidates;
  for (const auto& i : c.instructions()) {
    pos[i.get()] = pos.size();
    if (IsReductionFusion(*i) && i.get() != c.root()) candidates.push_back(i.get());
  }
  std::unordered_set<const HloInstruction*> merged;
  Merger merger(module, c, edits);
  for (size_t x = 0; x < candidates.size(); ++x) {
    if (merged.count(candidates[x])) continue;
    std::vector<HloInstruction*> members = {candidates[x]};
    std::unique_ptr<HloComputation> fused;
    std::unique_ptr<HloInstruction> fusion;
    for (size_t y = x + 1; y < candidates.size(); ++y) {
      HloInstruction& b = *candidates[y];
      // (the group's members precede b, so only b can read one of them)
      if (merged.count(&b) ||
          std::none_of(members.begin(), members.end(),
                       [&](const HloInstruction* g) { return ShareAnOperand(*g, b); }) ||
          std::any_of(members.begin(), members.end(),
                      [&](const HloInstruction* g) { return Reads(b, *g, pos); }))
        continue;
      std::vector<const HloInstruction*> more(members.begin(), members.end());
      more.push_back(&b);
      std::unique_ptr<HloComputation> f;
      std::unique_ptr<HloInstruction> candidate = merger.Build(more, more, f);
      if (!target.ExactReductionFusion(*candidate)) continue;
      members.push_back(&b), fused = std::move(f), fusion = std::move(candidate);
    }
    if (members.size() < 2) continue;
    HloInstruction* f = merger.Add(std::move(fusion), std::move(fused));
    for (size_t k = 0; k < members.size(); ++k) {
      merger.Replace(*members[k], f, static_cast<int64_t>(k));
      merger.Drop(*members[k]);
      merged.insert(members[k]);
    }
  }
}

// What the producer sweeps share: the instructions of `c` as they were and their positions
// (they walk this, as Merger::Add appends to the computation), users, what merged already.
struct ProducerSweep {
  std::vector<HloInstruction*> given;
  std::unordered_map<const HloInstruction*, size_t> pos;
  UserMap users;
  std::unordered_set<const HloInstruction*> merged;
  Merger merger;
  const HloComputation& c;

  ProducerSweep(hlo::HloModule& m, HloComputation& comp, ModuleEdits& edits)
      : users(ComputeUsers(comp)), merger(m, comp, edits), c(comp) {
    for (const auto& i : comp.instructions()) pos[i.get()] = given.size(), given.push_back(i.get());
  }

  // Whether loop fusion `p`, an operand of `consumer`, may be computed inside it: not merged
  // yet, not the result, read elsewhere too (a producer read only by the consumer would have
  // fused into it), and no other operand of the consumer depends on it (a cycle).
  bool Mergeable(const HloInstruction& consumer, const HloInstruction* p) const {
    if (!IsLoopFusion(*p) || merged.count(p) || p == c.root() || !users.count(p) ||
        users.at(p).size() < 2)
      return false;
    for (const HloInstruction* o : consumer.operands())
      if (o != p && Reads(*o, *p, pos)) return false;
    return true;
  }
};

// Producer-consumer: a loop fusion read by a reduction fusion and by others computes inside
// the reduction fusion, which also outputs its value (read once instead of written and read
// back). Not when another operand of the sums depends on the producer.
void MergeProducers(hlo::HloModule& module, HloComputation& c,
                    const target::TargetDescription& target, ModuleEdits& edits) {
  ProducerSweep sweep(module, c, edits);
  const UserMap& users = sweep.users;
  Merger& merger = sweep.merger;
  for (HloInstruction* owned : sweep.given) {
    HloInstruction& sums = *owned;
    if (!IsSumsFusion(sums) || &sums == c.root()) continue;
    std::vector<HloInstruction*> readers =
        users.count(&sums) ? users.at(&sums) : std::vector<HloInstruction*>{};
    if (sums.shape().IsTuple() &&
        !std::all_of(readers.begin(), readers.end(), [](const HloInstruction* r) {
          return r->opcode() == hlo::Opcode::kGetTupleElement;
        }))
      continue;
    for (HloInstruction* producer : sums.operands()) {
      if (!sweep.Mergeable(sums, producer)) continue;
      std::unique_ptr<HloComputation> fused;
      std::unique_ptr<HloInstruction> fusion =
          merger.Build({producer, &sums}, {&sums, producer}, fused);
      if (!target.ExactReductionFusion(*fusion)) continue;
      HloInstruction* f = merger.Add(std::move(fusion), std::move(fused));
      if (sums.shape().IsTuple()) {  // each reader keeps its element's index
        for (HloInstruction* r : readers) merger.Replace(*r, f, r->GetInt("index").value_or(0));
      } else {
        merger.Replace(sums, f, 0);
      }
      merger.Replace(*producer, f, static_cast<int64_t>(f->shape().tuple_shapes.size()) - 1);
      merger.Drop(sums), merger.Drop(*producer);
      sweep.merged.insert(producer);
      break;
    }
  }
}

// Producer-consumer for loop fusions, as XLA's multi-output fusion merges them: loop fusions
// of the consumer's shape that the consumer reads and that are also read elsewhere (results,
// say) are computed inside it, which outputs their values too: an optimizer's new `m` and
// `v` inside its weight update, one pass over HBM instead of three. Up to two producers; not
// when another operand of the consumer depends on one.
void MergeLoopProducers(hlo::HloModule& module, HloComputation& c,
                        const target::TargetDescription& target, ModuleEdits& edits) {
  ProducerSweep sweep(module, c, edits);
  Merger& merger = sweep.merger;
  for (HloInstruction* owned : sweep.given) {
    HloInstruction& consumer = *owned;
    if (!IsLoopFusion(consumer) || &consumer == c.root() || sweep.merged.count(&consumer)) continue;
    std::vector<HloInstruction*> producers;
    for (HloInstruction* p : consumer.operands())
      if (producers.size() < 2 && p->shape().dims == consumer.shape().dims &&
          std::find(producers.begin(), producers.end(), p) == producers.end() &&
          sweep.Mergeable(consumer, p))
        producers.push_back(p);
    if (producers.empty()) continue;
    std::vector<const HloInstruction*> members(producers.begin(), producers.end());
    members.push_back(&consumer);
    std::vector<const HloInstruction*> outputs = {&consumer};
    outputs.insert(outputs.end(), producers.begin(), producers.end());
    std::unique_ptr<HloComputation> fused;
    std::unique_ptr<HloInstruction> fusion = merger.Build(members, outputs, fused);
    fusion->SetAttr("kind", hlo::Word{"kLoop"});
    // The framework op is the consumer's (its own metadata, else its fused root's).
    const hlo::Attribute* meta = consumer.FindAttr("metadata");
    if (!meta) meta = consumer.fused_computation()->root()->FindAttr("metadata");
    if (meta) fusion->mutable_attributes().push_back(*meta);
    if (!target.ExactMultiOutputLoopFusion(*fusion)) continue;
    HloInstruction* f = merger.Add(std::move(fusion), std::move(fused));
    merger.Replace(consumer, f, 0);
    for (size_t k = 0; k < producers.size(); ++k)
      merger.Replace(*producers[k], f, static_cast<int64_t>(k + 1));
    merger.Drop(consumer);
    for (HloInstruction* p : producers) merger.Drop(*p), sweep.merged.insert(p);
    sweep.merged.insert(&consumer);
  }
}

}  // namespace

hlo::Result<bool> MultiOutputFusionPass::Run(hlo::HloModule& module) {
  bool changed = false;
  for (auto sweep : {MergeSiblings, MergeProducers, MergeLoopProducers}) {
    ModuleEdits edits;
    for (HloComputation* c : KernelComputations(module)) sweep(module, *c, target_, edits);
    if (edits.empty()) continue;
    hlo::Status s = ApplyEdits(module, edits);
    if (!s.ok()) return s;
    changed = true;
  }
  return changed;
}

}  // namespace tpusim::passes
