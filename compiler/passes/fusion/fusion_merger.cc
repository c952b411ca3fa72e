// Fusion merging; see fusion_merger.h.
#include "compiler/passes/fusion/fusion_merger.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/fusion/fusion_ops.h"
#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

bool IsKind(const HloInstruction& i, std::string_view kind) {
  return i.opcode() == Opcode::kFusion && i.fused_computation() &&
         i.GetWord("kind").value_or("") == kind;
}

bool IsLoopFusion(const HloInstruction& i) { return IsKind(i, "kLoop") && i.shape().IsArray(); }

// A fusion a producer may be computed inside: a loop fusion or an input (reduction) fusion,
// multi-output ones included.
bool TakesProducers(const HloInstruction& i) { return IsLoopFusion(i) || IsKind(i, "kInput"); }

// Every instruction of the loop fusion `f` is cheap to compute twice.
bool AllCheap(const HloInstruction& f) {
  for (const auto& i : f.fused_computation()->instructions()) {
    const Opcode op = i->opcode();
    if (op != Opcode::kParameter && op != Opcode::kConstant && op != Opcode::kBroadcast &&
        !IsCheap(*i))
      return false;
  }
  return true;
}

int64_t Bytes(const hlo::Shape& s) {
  if (s.IsTuple()) {
    int64_t n = 0;
    for (const hlo::Shape& e : s.tuple_shapes) n += Bytes(e);
    return n;
  }
  return s.ElementCount() * std::max<int64_t>(1, hlo::PrimitiveTypeBits(s.type) / 8);
}

bool Reads(const HloInstruction& user, const HloInstruction* value) {
  return std::find(user.operands().begin(), user.operands().end(), value) != user.operands().end();
}

// The bytes of the operands of `producer` that stream with its elements: those with as many
// elements as its result. Smaller ones (per-feature vectors, scalars) are read once per
// kernel, whatever the data size, and are not counted.
int64_t StreamedBytes(const HloInstruction& producer, const HloInstruction* o) {
  return o->shape().IsArray() && o->shape().ElementCount() == producer.shape().ElementCount()
             ? Bytes(o->shape())
             : 0;
}

// The streamed bytes `user` would read in addition if it computed `producer` itself.
int64_t AddedReads(const HloInstruction& producer, const HloInstruction& user) {
  int64_t n = 0;
  std::unordered_set<const HloInstruction*> seen;
  for (const HloInstruction* o : producer.operands())
    if (seen.insert(o).second && !Reads(user, o)) n += StreamedBytes(producer, o);
  return n;
}

// `consumer` with `producer` computed inside it (its reads of the producer replaced by the
// producer's body over the consumer's own parameters where they read the same value), built
// aside with the consumer's kind.
std::unique_ptr<HloInstruction> Inline(const HloComputation& c, const HloInstruction& consumer,
                                       const HloInstruction& producer, std::string name,
                                       std::unique_ptr<HloComputation>& fused) {
  fused = std::make_unique<HloComputation>(std::move(name));
  std::vector<HloInstruction*> operands, params;
  auto param_for = [&](HloInstruction* outside, const hlo::Shape& shape) {
    auto at = std::find(operands.begin(), operands.end(), outside);
    if (at != operands.end()) return params.at(static_cast<size_t>(at - operands.begin()));
    operands.push_back(outside);
    auto p = std::make_unique<HloInstruction>("param_" + std::to_string(params.size()),
                                              Opcode::kParameter, shape);
    p->set_parameter_number(static_cast<int64_t>(params.size()));
    params.push_back(fused->AddInstruction(std::move(p)));
    return params.back();
  };
  HloInstruction* inlined = nullptr;  // the producer's root, cloned on first use
  auto operand_of = [](const HloInstruction& fusion, const HloInstruction& param) {
    return fusion.operand(static_cast<size_t>(param.parameter_number()));
  };
  fused->set_root(CloneBody(*consumer.fused_computation(), *fused, [&](const HloInstruction& q) {
    HloInstruction* outside = operand_of(consumer, q);
    if (outside != &producer) return param_for(outside, q.shape());
    if (!inlined)
      inlined = CloneBody(*producer.fused_computation(), *fused, [&](const HloInstruction& pq) {
        return param_for(operand_of(producer, pq), pq.shape());
      });
    return inlined;
  }));
  auto fusion = std::make_unique<HloInstruction>(UniqueName(c, consumer.name()), Opcode::kFusion,
                                                 consumer.shape());
  for (HloInstruction* o : operands) fusion->AddOperand(o);
  fusion->SetAttr("kind", hlo::Word{std::string(consumer.GetWord("kind").value_or("kLoop"))});
  fusion->SetAttr("calls", hlo::ComputationRefs{{fused->name()}, {fused.get()}, false});
  return fusion;
}

class Sweep {
 public:
  Sweep(hlo::HloModule& m, HloComputation& c, const target::TargetDescription& target,
        ModuleEdits& edits)
      : m_(m), c_(c), target_(target), edits_(edits), users_(ComputeUsers(c)) {}

  // XLA's FusionMerger: loop fusions into all their users.
  void MergeIntoUsers() {
    for (const auto& owned : c_.instructions()) {
      HloInstruction& p = *owned;
      if (!IsLoopFusion(p) || &p == c_.root() || touched_.count(&p)) continue;
      const std::vector<HloInstruction*>& users = users_.at(&p);
      if (users.empty() || (users.size() > 1 && !AllCheap(p))) continue;
      int64_t before = Bytes(p.shape()) * static_cast<int64_t>(users.size() + 1), after = 0;
      for (const HloInstruction* o : p.operands()) before += StreamedBytes(p, o);
      bool fits = true;
      for (const HloInstruction* u : users) {
        if (!TakesProducers(*u) || touched_.count(u)) fits = false;
        if (!fits) break;
        after += AddedReads(p, *u);
      }
      if (!fits || after > before) continue;
      std::vector<Built> merged;
      for (HloInstruction* u : users)
        if (!BuildExact(*u, p, merged)) break;
      if (merged.size() != users.size()) continue;
      Commit(merged);
      edits_.remove.insert(&p);
      edits_.remove_computations.insert(p.fused_computation());
      touched_.insert(&p);
    }
  }

  // InstructionFusion's duplication: cheap loop fusions copied into the fusions that read
  // them where the copy adds fewer bytes than it saves (a copy that trades equal bytes only
  // adds work).
  void CopyIntoReaders() {
    for (const auto& owned : c_.instructions()) {
      HloInstruction& p = *owned;
      if (!IsLoopFusion(p) || touched_.count(&p) || !AllCheap(p)) continue;
      const std::vector<HloInstruction*>& users = users_.at(&p);
      size_t copied = 0;
      for (HloInstruction* u : users) {
        if (!TakesProducers(*u) || touched_.count(u) || AddedReads(p, *u) >= Bytes(p.shape()))
          continue;
        std::vector<Built> one;
        if (!BuildExact(*u, p, one)) continue;
        Commit(one);
        ++copied;
      }
      if (copied == 0) continue;
      touched_.insert(&p);
      if (copied == users.size() && &p != c_.root()) {
        edits_.remove.insert(&p);
        edits_.remove_computations.insert(p.fused_computation());
      }
    }
  }

 private:
  struct Built {
    HloInstruction* consumer;
    std::unique_ptr<HloInstruction> fusion;
    std::unique_ptr<HloComputation> fused;
  };

  // `consumer` with `producer` inside, if the target computes it exactly.
  bool BuildExact(HloInstruction& consumer, const HloInstruction& producer,
                  std::vector<Built>& out) {
    Built b{&consumer, nullptr, nullptr};
    b.fusion = Inline(c_, consumer, producer, ComputationName(), b.fused);
    const bool exact = IsLoopFusion(*b.fusion) ? target_.ExactLoopFusion(*b.fusion)
                                               : target_.ExactReductionFusion(*b.fusion);
    if (!exact) return false;
    out.push_back(std::move(b));
    return true;
  }

  // A name for a new fused computation, unused in the module and by the ones built aside.
  std::string ComputationName() {
    std::string name = UniqueComputationName(m_, "fused_computation");
    for (int n = 1; !names_.insert(name).second; ++n)
      name = UniqueComputationName(m_, "fused_computation." + std::to_string(n));
    return name;
  }

  void Commit(std::vector<Built>& built) {
    for (Built& b : built) {
      const HloComputation* old = b.consumer->fused_computation();
      m_.AddComputation(std::move(b.fused));
      HloInstruction* f = c_.AddInstruction(std::move(b.fusion));
      edits_.replace[b.consumer] = f;
      edits_.remove.insert(b.consumer);
      edits_.remove_computations.insert(old);
      touched_.insert(b.consumer);
    }
  }

  hlo::HloModule& m_;
  HloComputation& c_;
  const target::TargetDescription& target_;
  ModuleEdits& edits_;
  UserMap users_;
  // Fusions replaced or removed in this sweep: the next sweep sees the rebuilt module.
  std::unordered_set<const HloInstruction*> touched_;
  std::unordered_set<std::string> names_;  // of the computations built in this sweep
};

}  // namespace

hlo::Result<bool> FusionMergerPass::Run(hlo::HloModule& module) {
  bool changed = false;
  // Each sweep changes a fusion at most once; a merge can make a copy possible (the merged
  // consumer now reads the producer's operands), so the sweeps repeat while they change it.
  for (int round = 0; round < 8; ++round) {
    bool any = false;
    for (bool merge : {true, false}) {
      ModuleEdits edits;
      for (HloComputation* c : KernelComputations(module)) {
        Sweep s(module, *c, target_, edits);
        merge ? s.MergeIntoUsers() : s.CopyIntoReaders();
      }
      if (edits.empty()) continue;
      hlo::Status st = ApplyEdits(module, edits);
      if (!st.ok()) return st;
      any = changed = true;
    }
    if (!any) break;
  }
  return changed;
}

}  // namespace tpusim::passes
