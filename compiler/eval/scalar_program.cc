// ScalarProgram: building the step list once per computation, running it per element.
#include "compiler/eval/scalar_program.h"

#include <algorithm>
#include <unordered_map>

#include "compiler/eval/interpreter.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::OpCategory;
using hlo::Opcode;

bool IsScalarArray(const hlo::Shape& s) {
  return !s.IsTuple() && s.IsScalar() && s.type != PrimitiveType::kC64;
}

// The constant's one element, rounded to its type as Value::FromVector rounds it.
bool ConstantValue(const HloInstruction& instr, double& out) {
  const hlo::Literal& lit = instr.literal();
  if (lit.elided) return false;
  if (hlo::IsFloatingType(instr.shape().type)) {
    if (lit.floats.size() != 1) return false;
    out = RoundTo(instr.shape().type, lit.floats[0]);
  } else {
    if (lit.ints.size() != 1) return false;
    out = RoundTo(instr.shape().type, static_cast<double>(lit.ints[0]));
  }
  return true;
}

bool Supported(Opcode op, size_t num_operands) {
  const OpCategory c = hlo::GetOpcodeInfo(op).category;
  if (c == OpCategory::kElementwiseUnary) return num_operands == 1;
  if (c == OpCategory::kElementwiseBinary) return num_operands == 2;
  switch (op) {
    case Opcode::kSelect:
    case Opcode::kClamp:
      return num_operands == 3;
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
      return num_operands == 1;
    default:
      return false;
  }
}

}  // namespace

std::unique_ptr<ScalarProgram> ScalarProgram::Build(const hlo::HloComputation& comp) {
  const HloInstruction* root = comp.root();
  if (root == nullptr) return nullptr;
  auto p = std::make_unique<ScalarProgram>();
  std::unordered_map<const HloInstruction*, int> slot;
  const auto& instrs = comp.instructions();
  p->initial_.assign(instrs.size(), 0.0);
  for (size_t i = 0; i < instrs.size(); ++i) {
    const HloInstruction& instr = *instrs[i];
    const int s = static_cast<int>(i);
    slot[&instr] = s;
    if (&instr == root && instr.opcode() == Opcode::kTuple) break;  // read below
    if (!IsScalarArray(instr.shape())) return nullptr;
    if (instr.opcode() == Opcode::kParameter) {
      if (instr.parameter_number() < 0) return nullptr;
      p->parameters_.emplace_back(s, static_cast<int>(instr.parameter_number()));
      p->num_parameters_ =
          std::max(p->num_parameters_, static_cast<size_t>(instr.parameter_number()) + 1);
      continue;
    }
    if (instr.opcode() == Opcode::kConstant) {
      if (!ConstantValue(instr, p->initial_[i])) return nullptr;
      continue;
    }
    const auto& ops = instr.operands();
    if (!Supported(instr.opcode(), ops.size())) return nullptr;
    Step step{&instr,
              instr.opcode(),
              ops[0]->shape().type,
              instr.shape().type,
              s,
              {0, 0, 0},
              "",
              false,
              hlo::GetOpcodeInfo(instr.opcode()).category == OpCategory::kElementwiseBinary};
    for (size_t k = 0; k < ops.size(); ++k) {
      auto it = slot.find(ops[k]);
      if (it == slot.end() || !IsScalarArray(ops[k]->shape())) return nullptr;
      step.operands[k] = it->second;
    }
    if (step.op == Opcode::kClamp) step.operand_type = ops[1]->shape().type;
    if (step.op == Opcode::kCompare) {
      step.direction = instr.GetWord("direction").value_or("");
      step.total_order = instr.GetWord("type").value_or("") == "TOTALORDER";
    }
    if (step.op == Opcode::kBitcastConvert &&
        hlo::PrimitiveTypeBits(step.operand_type) != hlo::PrimitiveTypeBits(step.result_type))
      return nullptr;
    p->steps_.push_back(std::move(step));
  }
  if (root->opcode() == Opcode::kTuple) {
    for (const HloInstruction* op : root->operands()) {
      auto it = slot.find(op);
      if (it == slot.end() || !IsScalarArray(op->shape()) || op == root) return nullptr;
      p->results_.push_back(it->second);
    }
  } else {
    p->results_.push_back(slot.at(root));
  }
  return p;
}

Status ScalarProgram::Run(std::span<const double> args, std::span<double> results) const {
  double small[32];
  std::vector<double> large(initial_.size() > 32 ? initial_.size() : 0);
  double* v = initial_.size() > 32 ? large.data() : small;
  std::copy(initial_.begin(), initial_.end(), v);
  for (const auto& [s, n] : parameters_) v[s] = args[static_cast<size_t>(n)];
  for (const Step& st : steps_) {
    const double a = v[st.operands[0]];
    double r;
    switch (st.op) {
      case Opcode::kSelect:
        r = a != 0 ? v[st.operands[1]] : v[st.operands[2]];
        break;
      case Opcode::kClamp: {  // clamp(lo, x, hi) = min(max(x, lo), hi), as ops_elementwise.cc
        Result<double> lo = BinaryScalar(Opcode::kMaximum, st.operand_type, v[st.operands[1]], a);
        if (!lo.ok()) return InstrError(*st.instr, lo.status().message());
        Result<double> hi = BinaryScalar(Opcode::kMinimum, st.operand_type, *lo, v[st.operands[2]]);
        if (!hi.ok()) return InstrError(*st.instr, hi.status().message());
        r = RoundTo(st.operand_type, *hi);
        break;
      }
      case Opcode::kConvert:
        r = ConvertTo(st.operand_type, st.result_type, a);
        break;
      case Opcode::kBitcastConvert:
        r = FromBits(st.result_type, ToBits(st.operand_type, a));
        break;
      default: {
        Result<double> x = st.binary ? BinaryScalar(st.op, st.operand_type, a, v[st.operands[1]],
                                                    st.direction, st.total_order)
                                     : UnaryScalar(st.op, st.operand_type, a);
        if (!x.ok()) return InstrError(*st.instr, x.status().message());
        r = RoundTo(st.result_type, *x);
      }
    }
    v[st.out] = r;
  }
  for (size_t k = 0; k < results_.size(); ++k) results[k] = v[results_[k]];
  return Status::Ok();
}

}  // namespace tpusim::eval
