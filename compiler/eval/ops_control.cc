// Tuples and control flow: tuple, get-tuple-element, opt-barrier, call, fusion, while,
// conditional.
#include "compiler/eval/interpreter.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

std::vector<Value> Copy(Operands ops) {
  std::vector<Value> v;
  for (const Value* op : ops) v.push_back(*op);
  return v;
}

Result<Value> Tuple(const HloInstruction&, Operands ops, Interpreter&) {
  return Value::Tuple(Copy(ops));
}

Result<Value> OptimizationBarrier(const HloInstruction&, Operands ops, Interpreter&) {
  return *ops[0];
}

// copy-start: (destination, source, context); copy-done: the destination.
Result<Value> CopyStart(const HloInstruction& instr, Operands ops, Interpreter&) {
  std::vector<Value> elements = {*ops[0], *ops[0]};
  for (size_t k = 2; k < instr.shape().tuple_shapes.size(); ++k)
    elements.push_back(Value::Zeros(instr.shape().tuple_shapes[k]));
  return Value::Tuple(std::move(elements));
}

Result<Value> CopyDone(const HloInstruction&, Operands ops, Interpreter&) {
  return ops[0]->elements.at(0);
}

Result<Value> GetTupleElement(const HloInstruction& instr, Operands ops, Interpreter&) {
  int64_t i = instr.GetInt("index").value_or(-1);
  if (!ops[0]->IsTuple() || i < 0 || i >= static_cast<int64_t>(ops[0]->elements.size())) {
    return InstrError(instr, "bad tuple index " + std::to_string(i));
  }
  return ops[0]->elements[i];
}

Result<Value> Call(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  const hlo::HloComputation* comp =
      instr.opcode() == Opcode::kFusion ? instr.fused_computation() : instr.to_apply();
  if (comp == nullptr) return InstrError(instr, "no called computation");
  return interp.Call(*comp, Copy(ops));
}

Result<Value> While(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  const hlo::HloComputation *cond = instr.condition(), *body = instr.body();
  if (cond == nullptr || body == nullptr) return InstrError(instr, "needs condition and body");
  std::vector<Value> state = {*ops[0]};
  for (int64_t trips = 0;; ++trips) {
    Result<Value> go = interp.Call(*cond, state);
    if (!go.ok()) return go.status();
    if (go->scalar() == 0) return std::move(state[0]);
    if (trips >= interp.options().max_while_iterations) {
      return InstrError(
          instr,
          "ran more than " + std::to_string(interp.options().max_while_iterations) + " iterations");
    }
    Result<Value> next = interp.Call(*body, state);
    if (!next.ok()) return next.status();
    state[0] = std::move(*next);
  }
}

// conditional(pred, t_arg, f_arg) or conditional(index, arg0, ..., argN-1); an index out of
// range picks the last branch, as XLA does.
Result<Value> Conditional(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  std::vector<const hlo::HloComputation*> branches;
  if (instr.CalledComputation("true_computation") != nullptr) {
    branches = {instr.CalledComputation("true_computation"),
                instr.CalledComputation("false_computation")};
  } else {
    for (const hlo::HloComputation* c : instr.branch_computations()) branches.push_back(c);
  }
  if (branches.empty() || branches.size() + 1 != ops.size()) {
    return InstrError(instr, "branch and operand counts do not match");
  }
  size_t pick;
  if (ops[0]->type() == PrimitiveType::kPred) {
    pick = ops[0]->scalar() != 0 ? 0 : 1;
  } else {
    int64_t i = static_cast<int64_t>(ops[0]->scalar());
    pick = i < 0 || i >= static_cast<int64_t>(branches.size()) ? branches.size() - 1 : i;
  }
  if (branches[pick] == nullptr) return InstrError(instr, "missing branch computation");
  std::vector<Value> arg = {*ops[pick + 1]};
  return interp.Call(*branches[pick], arg);
}

}  // namespace

void RegisterControl(OpTable& t) {
  t[static_cast<size_t>(Opcode::kTuple)] = Tuple;
  t[static_cast<size_t>(Opcode::kGetTupleElement)] = GetTupleElement;
  t[static_cast<size_t>(Opcode::kOptimizationBarrier)] = OptimizationBarrier;
  t[static_cast<size_t>(Opcode::kCopyStart)] = CopyStart;
  t[static_cast<size_t>(Opcode::kCopyDone)] = CopyDone;
  t[static_cast<size_t>(Opcode::kCall)] = Call;
  t[static_cast<size_t>(Opcode::kFusion)] = Call;
  t[static_cast<size_t>(Opcode::kWhile)] = While;
  t[static_cast<size_t>(Opcode::kConditional)] = Conditional;
}

}  // namespace tpusim::eval
