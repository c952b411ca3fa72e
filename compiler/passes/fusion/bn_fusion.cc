// Batch-norm fusion; see bn_fusion.h.
#include "compiler/passes/fusion/bn_fusion.h"

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

bool IsElement(const HloInstruction* i, int64_t k) {
  return i->opcode() == Opcode::kGetTupleElement && i->GetInt("index").value_or(-1) == k;
}

bool IsElementwise(const HloInstruction& i) {
  const hlo::OpCategory c = hlo::GetOpcodeInfo(i.opcode()).category;
  return i.shape().IsArray() &&
         (c == hlo::OpCategory::kElementwiseUnary || c == hlo::OpCategory::kElementwiseBinary ||
          c == hlo::OpCategory::kElementwiseTernary);
}

bool IsLoopFusion(const HloInstruction& i) {
  return i.opcode() == Opcode::kFusion && i.fused_computation() && i.shape().IsArray() &&
         i.GetWord("kind").value_or("") == "kLoop";
}

class Fuser {
 public:
  Fuser(hlo::HloModule& m, HloComputation& c, const target::TargetDescription& target,
        ModuleEdits& edits)
      : m_(m), c_(c), target_(target), edits_(edits), users_(ComputeUsers(c)) {}

  bool Run() {
    bool changed = false;
    const size_t count = c_.instructions().size();  // fusing appends
    for (size_t k = 0; k < count; ++k) {
      HloInstruction& i = *c_.instructions()[k];
      if (i.opcode() == Opcode::kBatchNormTraining && &i != c_.root()) changed |= Try(i);
      if (i.opcode() == Opcode::kBatchNormGrad)
        changed |= TryGrad(i, /*duplicate=*/true) || TryGrad(i, /*duplicate=*/false);
    }
    return changed;
  }

 private:
  const std::vector<HloInstruction*>& Users(const HloInstruction* i) {
    static const std::vector<HloInstruction*> kNone;
    const auto it = users_.find(i);
    return it == users_.end() ? kNone : it->second;
  }

  // The value standing for `outside` in the fused computation: a clone of a scalar
  // constant, else a parameter (one per distinct operand).
  HloInstruction* Inside(HloInstruction* outside) {
    if (auto it = inside_.find(outside); it != inside_.end()) return it->second;
    HloInstruction* in = nullptr;
    if (outside->opcode() == Opcode::kConstant && outside->shape().IsScalar()) {
      in = fused_->AddInstruction(CloneWithOperands(*outside, outside->name(), {}));
    } else {
      const int64_t n = static_cast<int64_t>(operands_.size());
      auto p = std::make_unique<HloInstruction>("param_" + std::to_string(n), Opcode::kParameter,
                                                outside->shape());
      p->set_parameter_number(n);
      in = fused_->AddInstruction(std::move(p));
      operands_.push_back(outside);
    }
    return inside_[outside] = in;
  }

  HloInstruction* Element(HloInstruction* tuple, int64_t k, const std::string& name) {
    auto gte = std::make_unique<HloInstruction>(name, Opcode::kGetTupleElement,
                                                tuple->shape().tuple_shapes.at(k));
    gte->AddOperand(tuple);
    HloInstruction* e = fused_->AddInstruction(std::move(gte));
    e->SetAttr("index", k);
    return e;
  }

  using ValueMap = std::unordered_map<const HloInstruction*, HloInstruction*>;

  // Clones the elementwise op or loop fusion `e` into the fused computation, `given` values
  // standing for the outside ones they map; returns the clone of its result.
  HloInstruction* CloneConsumer(HloInstruction& e, const ValueMap& given) {
    auto operand = [&](HloInstruction* o) {
      const auto it = given.find(o);
      return it != given.end() ? it->second : Inside(o);
    };
    if (!IsLoopFusion(e)) {
      std::vector<HloInstruction*> ops;
      for (HloInstruction* o : e.operands()) ops.push_back(operand(o));
      return fused_->AddInstruction(CloneWithOperands(e, UniqueName(*fused_, e.name()), ops));
    }
    std::unordered_map<const HloInstruction*, HloInstruction*> map;
    for (const auto& i : e.fused_computation()->instructions()) {
      if (i->opcode() == Opcode::kParameter) {
        map[i.get()] = operand(e.operand(static_cast<size_t>(i->parameter_number())));
        continue;
      }
      std::vector<HloInstruction*> ops;
      for (HloInstruction* o : i->operands()) ops.push_back(map.at(o));
      map[i.get()] =
          fused_->AddInstruction(CloneWithOperands(*i, UniqueName(*fused_, i->name()), ops));
    }
    return map.at(e.fused_computation()->root());
  }

  // A new fused computation named from `base`, its parameters and constants not yet made.
  void StartFusion(const std::string& base) {
    fused_ = m_.AddComputation(std::make_unique<HloComputation>(UniqueComputationName(m_, base)));
    inside_.clear(), operands_.clear();
  }

  // Adds the fusion of the fused computation built so far, with `shape` and `kind`; keeps it
  // only if the target runs it on one exact kernel, else marks it and its computation gone.
  HloInstruction* FinishFusion(const hlo::Shape& shape, const char* kind) {
    HloInstruction* fusion = AddNew(c_, "fusion", Opcode::kFusion, shape, operands_);
    fusion->SetAttr("kind", hlo::Word{kind});
    fusion->SetAttr("calls", hlo::ComputationRefs{{fused_->name()}, {fused_}, false});
    if (target_.ExactBatchNormFusion(*fusion)) return fusion;
    edits_.remove.insert(fusion);
    edits_.remove_computations.insert(fused_);
    return nullptr;
  }

  // Whether `target` is `from` or one of its operands, transitively (no recursion).
  static bool DependsOn(const HloInstruction* from, const HloInstruction* target) {
    std::vector<const HloInstruction*> stack = {from};
    std::unordered_set<const HloInstruction*> seen;
    while (!stack.empty()) {
      const HloInstruction* i = stack.back();
      stack.pop_back();
      if (i == target) return true;
      if (!seen.insert(i).second) continue;
      for (const HloInstruction* o : i->operands()) stack.push_back(o);
    }
    return false;
  }

  // The training batch norm whose normalizing pass computes `value` (its fused consumer, ReLU)
  // from x with no other matrix, when `grad` takes that batch norm's x, gamma, mean and var:
  // the gradient can recompute `value` from the x it reads anyway. Else nullptr.
  const HloInstruction* DuplicableNormalize(const HloInstruction* value,
                                            const HloInstruction& grad) const {
    const auto it = fused_training_.find(value);
    if (it == fused_training_.end()) return nullptr;
    const HloInstruction* training = it->second;
    const auto normalized = [&](const HloInstruction* o) {
      return IsElement(o, 0) && o->operand(0) == training;
    };
    for (const HloInstruction* o : value->operands())
      if (!normalized(o) && !(o->opcode() == Opcode::kConstant && o->shape().IsScalar()))
        return nullptr;  // another matrix (a residual add): nothing saved
    const auto element = [&](const HloInstruction* i, int64_t k) {
      return IsElement(i, k) && i->operand(0) == training;
    };
    if (grad.operand(0) != training->operand(0) || grad.operand(1) != training->operand(1) ||
        !element(grad.operand(2), 1) || !element(grad.operand(3), 2))
      return nullptr;
    return training;
  }

  // Inside the fused computation: `consumer` of `training`'s normalized output, over
  // batch-norm-inference(x, gamma, beta, mean, var) of the same operands and statistics
  // (XLA's InstructionFusion duplicating a cheap elementwise producer into a consumer while
  // it stays for its other users, `may_duplicate`).
  HloInstruction* RecomputedConsumer(HloInstruction& consumer, const HloInstruction& training,
                                     const HloInstruction& grad) {
    const hlo::Shape& normalized_shape = training.shape().tuple_shapes.at(0);
    auto normalize = std::make_unique<HloInstruction>(
        UniqueName(*fused_, "normalized"), Opcode::kBatchNormInference, normalized_shape);
    for (HloInstruction* o : {training.operand(0), training.operand(1), training.operand(2),
                              grad.operand(2), grad.operand(3)})
      normalize->AddOperand(Inside(o));
    for (const hlo::Attribute& a : training.attributes())
      if (a.key == "epsilon" || a.key == "feature_index")
        normalize->mutable_attributes().push_back(a);
    HloInstruction* inside = fused_->AddInstruction(std::move(normalize));
    ValueMap given;
    for (HloInstruction* o : consumer.operands())
      if (IsElement(o, 0) && o->operand(0) == &training) given[o] = inside;
    return CloneConsumer(consumer, given);
  }

  // batch-norm-grad whose dy is computed by an elementwise op or loop fusion: the producer
  // moves into the fusion and the grad kernel computes dy per vreg. When dy has other readers
  // (a residual junction's gradient, also the skip path's), the fusion writes it as a fourth
  // result as its statistics pass computes it, and they read that (XLA's multi-output fusion
  // of a producer with its reduction consumers).
  // `duplicate`: only with the normalize of a training batch norm duplicated into dy's
  // producer (DuplicableNormalize), else not at all.
  bool TryGrad(HloInstruction& bn, bool duplicate) {
    if (bn.operand_count() != 5) return false;
    HloInstruction* dy = bn.operands()[4];
    if (dy == c_.root() || Users(dy).empty() || claimed_.count(dy)) return false;
    if (!IsElementwise(*dy) && !IsLoopFusion(*dy)) return false;
    const bool shared = Users(dy).size() > 1;
    if (shared)  // the other readers wait for the fusion: none of its operands may need them
      for (size_t k = 0; k < 4; ++k)
        if (DependsOn(bn.operands()[k], dy)) return false;
    std::vector<std::pair<HloInstruction*, const HloInstruction*>> recomputed;
    if (duplicate) {
      for (HloInstruction* o : dy->operands())
        if (const HloInstruction* training = DuplicableNormalize(o, bn))
          recomputed.push_back({o, training});
      if (recomputed.empty()) return false;
    }
    StartFusion("fused_batch_norm_grad");
    std::vector<HloInstruction*> ops;
    for (size_t k = 0; k < 4; ++k) ops.push_back(Inside(bn.operands()[k]));
    ValueMap given;
    for (const auto& [value, training] : recomputed)  // an operand read twice: cloned once
      if (!given.count(value)) given[value] = RecomputedConsumer(*value, *training, bn);
    HloInstruction* dy_inside = CloneConsumer(*dy, given);
    ops.push_back(dy_inside);
    HloInstruction* inner =
        fused_->AddInstruction(CloneWithOperands(bn, UniqueName(*fused_, bn.name()), ops));
    hlo::Shape shape = bn.shape();
    if (!shared) {
      fused_->set_root(inner);
    } else {
      std::vector<HloInstruction*> results = {Element(inner, 0, "dx"), Element(inner, 1, "dgamma"),
                                              Element(inner, 2, "dbeta"), dy_inside};
      shape.tuple_shapes.push_back(dy->shape());
      auto root = std::make_unique<HloInstruction>("tuple", Opcode::kTuple, shape);
      for (HloInstruction* o : results) root->AddOperand(o);
      fused_->set_root(fused_->AddInstruction(std::move(root)));
    }
    HloInstruction* fusion = FinishFusion(shape, "kInput");
    if (!fusion) return false;
    edits_.replace[&bn] = fusion;
    edits_.remove.insert(&bn);
    if (shared) {  // dy's readers take the fusion's fourth result, under dy's name
      auto gte =
          std::make_unique<HloInstruction>(dy->name(), Opcode::kGetTupleElement, dy->shape());
      gte->AddOperand(fusion);
      HloInstruction* element = c_.AddInstruction(std::move(gte));
      element->SetAttr("index", int64_t{3});
      edits_.replace[dy] = element;
    }
    edits_.remove.insert(dy);
    if (IsLoopFusion(*dy)) edits_.remove_computations.insert(dy->fused_computation());
    claimed_.insert(dy);
    return true;
  }

  bool Try(HloInstruction& bn) {
    HloInstruction* y = nullptr;
    std::vector<HloInstruction*> stats[3];
    for (HloInstruction* u : Users(&bn)) {
      if (u == c_.root()) return false;
      for (int64_t k = 0; k < 3; ++k)
        if (IsElement(u, k)) stats[k].push_back(u);
    }
    if (stats[0].size() + stats[1].size() + stats[2].size() != Users(&bn).size()) return false;
    if (stats[0].size() != 1) return false;
    y = stats[0].front();
    if (Users(y).size() != 1) return false;
    HloInstruction& e = *Users(y).front();
    if (!IsElementwise(e) && !IsLoopFusion(e)) return false;
    // Another batch norm's output may feed the same consumer (a residual add of two batch
    // norms): one of them takes it, the other's output is read as an operand.
    if (claimed_.count(&e)) return false;
    // The consumer's other operands are read by the fusion: none may need the batch norm
    // (an add of y to the gradient its statistics feed would be a cycle).
    for (const HloInstruction* o : e.operands())
      if (o != y && DependsOn(o, &bn)) return false;

    StartFusion("fused_batch_norm");
    std::vector<HloInstruction*> bn_ops;
    for (HloInstruction* o : bn.operands()) bn_ops.push_back(Inside(o));
    HloInstruction* inner =
        fused_->AddInstruction(CloneWithOperands(bn, UniqueName(*fused_, bn.name()), bn_ops));
    HloInstruction* result = CloneConsumer(e, {{y, Element(inner, 0, "normalized")}});
    HloInstruction* mean = Element(inner, 1, "mean");
    HloInstruction* var = Element(inner, 2, "var");
    const hlo::Shape shape = hlo::Shape::Tuple({result->shape(), mean->shape(), var->shape()});
    auto root = std::make_unique<HloInstruction>("tuple", Opcode::kTuple, shape);
    for (HloInstruction* o : {result, mean, var}) root->AddOperand(o);
    fused_->set_root(fused_->AddInstruction(std::move(root)));

    HloInstruction* fusion = FinishFusion(shape, "kOutput");
    if (!fusion) return false;
    // The results keep the names of the values they stand for (buffers, reports).
    auto element = [&](int64_t k, const std::string& name) {
      auto gte = std::make_unique<HloInstruction>(name, Opcode::kGetTupleElement,
                                                  shape.tuple_shapes.at(k));
      gte->AddOperand(fusion);
      HloInstruction* g = c_.AddInstruction(std::move(gte));
      g->SetAttr("index", k);
      return g;
    };
    edits_.replace[&e] = element(0, e.name());
    for (int64_t k = 1; k < 3; ++k) {
      if (stats[k].empty()) continue;
      HloInstruction* g = element(k, stats[k].front()->name());
      for (HloInstruction* old : stats[k]) edits_.replace[old] = g, edits_.remove.insert(old);
    }
    for (HloInstruction* gone : {&bn, y, &e}) edits_.remove.insert(gone);
    claimed_.insert(&e);
    fused_training_[&e] = &bn;
    if (IsLoopFusion(e)) edits_.remove_computations.insert(e.fused_computation());
    return true;
  }

  hlo::HloModule& m_;
  HloComputation& c_;
  const target::TargetDescription& target_;
  ModuleEdits& edits_;
  UserMap users_;
  HloComputation* fused_ = nullptr;  // of the fusion being built
  std::unordered_map<const HloInstruction*, HloInstruction*> inside_;
  std::vector<HloInstruction*> operands_;              // the fusion's, in parameter order
  std::unordered_set<const HloInstruction*> claimed_;  // consumers already fused
  // Consumers fused into a training batch norm's normalizing pass -> that batch norm.
  std::unordered_map<const HloInstruction*, const HloInstruction*> fused_training_;
};

}  // namespace

hlo::Result<bool> BatchNormFusionPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  bool changed = false;
  for (HloComputation* c : KernelComputations(module))
    changed |= Fuser(module, *c, target_, edits).Run();
  if (edits.empty()) return false;
  hlo::Status s = ApplyEdits(module, edits);
  if (!s.ok()) return s;
  return changed;
}

}  // namespace tpusim::passes
