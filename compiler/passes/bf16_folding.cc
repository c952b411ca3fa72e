#include "compiler/passes/bf16_folding.h"

#include <memory>
#include <vector>

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;
using hlo::PrimitiveType;

bool IsConvert(const HloInstruction& i, PrimitiveType from, PrimitiveType to) {
  return i.opcode() == Opcode::kConvert && i.shape().IsArray() && i.shape().type == to &&
         i.operand_count() == 1 && i.operand(0)->shape().IsArray() &&
         i.operand(0)->shape().type == from;
}

// `users`, when there are some and every one converts f32 to bf16; else empty.
std::vector<HloInstruction*> NarrowingUsers(const std::vector<HloInstruction*>& users) {
  for (const HloInstruction* u : users)
    if (!IsConvert(*u, PrimitiveType::kF32, PrimitiveType::kBF16)) return {};
  return users;
}

bool IsBatchNorm(Opcode op) {
  return op == Opcode::kBatchNormTraining || op == Opcode::kBatchNormInference ||
         op == Opcode::kBatchNormGrad;
}

// Ops that only move values: narrowing their operands instead of their result changes
// nothing but the bytes moved.
bool IsMovement(Opcode op) {
  return op == Opcode::kPad || op == Opcode::kConcatenate || op == Opcode::kBitcast;
}

class Folder {
 public:
  Folder(HloComputation& c, const target::TargetDescription& target, ModuleEdits& edits)
      : c_(c), target_(target), edits_(edits), users_(ComputeUsers(c)) {}

  void Run() {
    const size_t count = c_.instructions().size();  // folds append
    for (size_t k = 0; k < count; ++k) {
      HloInstruction& i = *c_.instructions()[k];
      if (&i == c_.root()) continue;
      if (i.opcode() == Opcode::kConvolution) FoldConvolution(i);
      if (IsBatchNorm(i.opcode())) FoldBatchNorm(i);
      if (IsMovement(i.opcode())) FoldMovement(i);
    }
  }

 private:
  const std::vector<HloInstruction*>& Users(const HloInstruction& i) {
    static const std::vector<HloInstruction*> kNone;
    const auto it = users_.find(&i);
    return it == users_.end() ? kNone : it->second;
  }

  // Replaces each of `converts` by `value` and drops them.
  void Bypass(const std::vector<HloInstruction*>& converts, HloInstruction* value) {
    for (HloInstruction* cv : converts) {
      edits_.replace[cv] = value;
      edits_.remove.insert(cv);
    }
  }

  void FoldConvolution(HloInstruction& conv) {
    if (!conv.shape().IsArray() || conv.shape().type != PrimitiveType::kF32) return;
    const std::vector<HloInstruction*> converts = NarrowingUsers(Users(conv));
    if (converts.empty()) return;
    std::unique_ptr<HloInstruction> narrow = CloneWithOperands(conv, conv.name(), conv.operands());
    narrow->mutable_shape().type = PrimitiveType::kBF16;
    if (!target_.ExactConvolution(*narrow) || !target_.ExactBf16Reads(narrow->shape())) return;
    HloInstruction* folded = c_.AddInstruction(std::move(narrow));
    edits_.replace[&conv] = folded;
    edits_.remove.insert(&conv);
    Bypass(converts, folded);
  }

  // convert_bf16(move_f32(a, ...)) -> move_bf16(convert_bf16(a), ...): the convert moves to
  // the operands (a scalar constant pad value becomes a bf16 constant; an operand widened
  // from bf16 is read as it was), where it may fold again (the next round).
  void FoldMovement(HloInstruction& move) {
    if (!move.shape().IsArray() || move.shape().type != PrimitiveType::kF32) return;
    const std::vector<HloInstruction*> converts = NarrowingUsers(Users(move));
    if (converts.empty()) return;
    std::vector<HloInstruction*> operands;
    std::vector<std::unique_ptr<HloInstruction>> fresh;  // added only if the fold happens
    for (HloInstruction* o : move.operands()) {
      if (!o->shape().IsArray() || o->shape().type != PrimitiveType::kF32) return;
      if (IsConvert(*o, PrimitiveType::kBF16, PrimitiveType::kF32)) {
        operands.push_back(o->operand(0));
        continue;
      }
      std::unique_ptr<HloInstruction> n =
          o->opcode() == Opcode::kConstant && o->shape().IsScalar()
              ? CloneWithOperands(*o, UniqueName(c_, o->name() + ".bf16"), {})
              : std::make_unique<HloInstruction>(UniqueName(c_, o->name() + ".bf16"),
                                                 Opcode::kConvert, o->shape());
      n->mutable_shape().type = PrimitiveType::kBF16;
      if (n->opcode() == Opcode::kConvert) n->AddOperand(o);
      operands.push_back(n.get());
      fresh.push_back(std::move(n));
    }
    std::unique_ptr<HloInstruction> narrow = CloneWithOperands(move, move.name(), operands);
    narrow->mutable_shape().type = PrimitiveType::kBF16;
    if (!target_.ExactBf16Move(*narrow)) return;
    for (auto& n : fresh) c_.AddInstruction(std::move(n));
    HloInstruction* folded = c_.AddInstruction(std::move(narrow));
    edits_.replace[&move] = folded;
    edits_.remove.insert(&move);
    Bypass(converts, folded);
  }

  void FoldBatchNorm(HloInstruction& bn) {
    std::vector<HloInstruction*> operands(bn.operands().begin(), bn.operands().end());
    bool widened = false;  // an operand read as the bf16 value its convert widened
    for (size_t k : {size_t{0}, size_t{4}}) {  // x; dy (grad)
      if (k >= operands.size() || (k == 4 && bn.opcode() != Opcode::kBatchNormGrad)) continue;
      if (IsConvert(*operands[k], PrimitiveType::kBF16, PrimitiveType::kF32))
        operands[k] = operands[k]->operand(0), widened = true;
    }
    // The result matrix: the op itself (inference) or its get-tuple-element 0.
    const bool tuple = bn.shape().IsTuple();
    HloInstruction* result = nullptr;
    if (!tuple) {
      result = &bn;
    } else {
      for (HloInstruction* u : Users(bn))
        if (u->opcode() != Opcode::kGetTupleElement)
          return;  // a use of the whole tuple
        else if (u->GetInt("index").value_or(-1) == 0)
          result = result ? nullptr : u;
    }
    std::vector<HloInstruction*> converts;
    if (result && result != c_.root() && target_.ExactBf16Reads(result->shape()))
      converts = NarrowingUsers(Users(*result));
    if (!widened && converts.empty()) return;
    std::unique_ptr<HloInstruction> folded = CloneWithOperands(bn, bn.name(), operands);
    hlo::Shape& y = tuple ? folded->mutable_shape().tuple_shapes[0] : folded->mutable_shape();
    if (!converts.empty()) y.type = PrimitiveType::kBF16;
    if (!target_.ExactBatchNorm(*folded)) return;
    HloInstruction* op = c_.AddInstruction(std::move(folded));
    edits_.replace[&bn] = op;
    edits_.remove.insert(&bn);
    if (!tuple) return Bypass(converts, op);
    for (HloInstruction* u : Users(bn)) {  // the get-tuple-elements, read from the new op
      std::unique_ptr<HloInstruction> g = CloneWithOperands(*u, u->name(), {op});
      g->mutable_shape() =
          op->shape().tuple_shapes.at(static_cast<size_t>(u->GetInt("index").value_or(0)));
      HloInstruction* gte = c_.AddInstruction(std::move(g));
      edits_.replace[u] = gte;
      edits_.remove.insert(u);
      if (u == result) Bypass(converts, gte);
    }
  }

  HloComputation& c_;
  const target::TargetDescription& target_;
  ModuleEdits& edits_;
  UserMap users_;
};

}  // namespace

// Rounds until nothing folds: a convert moved onto a movement's operands may fold into the
// op that computes them (a chain of pads and concatenates after a convolution), one step per
// round.
hlo::Result<bool> Bf16ConversionFoldingPass::Run(hlo::HloModule& module) {
  constexpr int kMaxRounds = 16;
  bool changed = false;
  for (int round = 0; round < kMaxRounds; ++round) {
    ModuleEdits edits;
    for (HloComputation* c : KernelComputations(module)) Folder(*c, target_, edits).Run();
    if (edits.empty()) break;
    if (hlo::Status st = ApplyEdits(module, edits); !st.ok()) return st;
    changed = true;
  }
  return changed;
}

}  // namespace tpusim::passes
