// Reductions: reduce, reduce-window, select-and-scatter. Reducers are HLO computations,
// applied in row-major order of the reduced elements.
#include "compiler/eval/interpreter.h"
#include "compiler/eval/window.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// Output arrays of a variadic reduction: the tuple elements, or the array itself.
std::vector<Value> Outputs(const hlo::Shape& shape) {
  Value z = Value::Zeros(shape);
  if (z.IsTuple()) return z.elements;
  return {z};
}

Value Pack(std::vector<Value> outs, const hlo::Shape& shape) {
  if (shape.IsTuple()) return Value::Tuple(std::move(outs));
  return std::move(outs[0]);
}

std::vector<PrimitiveType> Types(Operands ops) {
  std::vector<PrimitiveType> t;
  for (const Value* op : ops) t.push_back(op->type());
  return t;
}

// Folds input element `i` of every input into accumulator `o` of every output.
Status Accumulate(Interpreter& interp, const hlo::HloComputation& f, Operands inputs,
                  std::vector<Value>& outs, int64_t i, int64_t o,
                  std::span<const PrimitiveType> types, std::vector<double>& args) {
  size_t n = inputs.size();
  for (size_t j = 0; j < n; ++j) args[j] = outs[j].data[o], args[n + j] = inputs[j]->data[i];
  double results[8];  // reduce takes at most a handful of inputs; more go to the heap
  std::vector<double> many(n > 8 ? n : 0);
  std::span<double> r = n > 8 ? std::span<double>(many) : std::span<double>(results, n);
  Status s = interp.CallScalar(f, args, types, r);
  if (!s.ok()) return s;
  for (size_t j = 0; j < n; ++j) outs[j].data[o] = RoundTo(outs[j].type(), r[j]);
  return Status::Ok();
}

Result<Value> Reduce(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  size_t n = ops.size() / 2;
  const hlo::HloComputation* f = instr.to_apply();
  if (f == nullptr || n == 0 || instr.dimensions() == nullptr) {
    return InstrError(instr, "needs to_apply and dimensions");
  }
  Operands inputs = ops.subspan(0, n);
  std::vector<Value> outs = Outputs(instr.shape());
  for (size_t j = 0; j < n; ++j)
    std::fill(outs[j].data.begin(), outs[j].data.end(), ops[n + j]->scalar());
  std::vector<bool> reduced(inputs[0]->shape.rank(), false);
  for (int64_t d : *instr.dimensions()) reduced[d] = true;
  std::vector<int64_t> out_strides = Strides(outs[0].dims()), idx(reduced.size(), 0);
  std::vector<PrimitiveType> types = Types(ops.subspan(n));
  types.insert(types.end(), types.begin(), types.end());
  std::vector<double> args(2 * n);
  for (int64_t i = 0; i < inputs[0]->size(); ++i, NextIndex(idx, inputs[0]->dims())) {
    int64_t o = 0;
    for (size_t d = 0, k = 0; d < idx.size(); ++d) {
      if (!reduced[d]) o += idx[d] * out_strides[k++];
    }
    Status s = Accumulate(interp, *f, inputs, outs, i, o, types, args);
    if (!s.ok()) return s;
  }
  return Pack(std::move(outs), instr.shape());
}

Result<Value> ReduceWindow(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  size_t n = ops.size() / 2;
  const hlo::HloComputation* f = instr.to_apply();
  const hlo::Window* window = instr.window();
  if (f == nullptr || n == 0 || window == nullptr)
    return InstrError(instr, "needs to_apply and window");
  Operands inputs = ops.subspan(0, n);
  std::vector<Value> outs = Outputs(instr.shape());
  std::vector<PrimitiveType> types = Types(ops.subspan(n));
  types.insert(types.end(), types.begin(), types.end());
  std::vector<int64_t> in_strides = Strides(inputs[0]->dims()), idx(outs[0].shape.rank(), 0);
  std::vector<double> args(2 * n);
  Status status;
  for (int64_t o = 0; o < outs[0].size(); ++o, NextIndex(idx, outs[0].dims())) {
    for (size_t j = 0; j < n; ++j) outs[j].data[o] = ops[n + j]->scalar();
    ForEachWindowInput(*window, inputs[0]->dims(), idx, [&](const auto&, const auto& in) {
      if (status.ok()) {
        status = Accumulate(interp, *f, inputs, outs, Linear(in, in_strides), o, types, args);
      }
    });
    if (!status.ok()) return status;
  }
  return Pack(std::move(outs), instr.shape());
}

// select-and-scatter(operand, source, init): for each window, `select` picks an element
// (select(current, candidate) true keeps the current one) and `scatter` adds the source
// value into the output at that element.
Result<Value> SelectAndScatter(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  const hlo::HloComputation *select = instr.CalledComputation("select"),
                            *scatter = instr.CalledComputation("scatter");
  const hlo::Window* window = instr.window();
  if (select == nullptr || scatter == nullptr || window == nullptr) {
    return InstrError(instr, "needs select, scatter and window");
  }
  const Value &operand = *ops[0], &source = *ops[1];
  Value out = Value::Zeros(instr.shape());
  std::fill(out.data.begin(), out.data.end(), ops[2]->scalar());
  std::vector<int64_t> strides = Strides(operand.dims()), idx(source.shape.rank(), 0);
  PrimitiveType t = operand.type();
  std::vector<PrimitiveType> types = {t, t};
  Status status;
  for (int64_t s = 0; s < source.size(); ++s, NextIndex(idx, source.dims())) {
    int64_t chosen = -1;
    ForEachWindowInput(*window, operand.dims(), idx, [&](const auto&, const auto& in) {
      int64_t i = Linear(in, strides);
      if (!status.ok()) return;
      if (chosen < 0) {
        chosen = i;
        return;
      }
      double args[2] = {operand.data[chosen], operand.data[i]};
      Result<std::vector<double>> keep = interp.CallScalar(*select, args, types);
      if (!keep.ok())
        status = keep.status();
      else if (keep->at(0) == 0)
        chosen = i;
    });
    if (!status.ok()) return status;
    if (chosen < 0) continue;
    double args[2] = {out.data[chosen], source.data[s]};
    Result<std::vector<double>> r = interp.CallScalar(*scatter, args, types);
    if (!r.ok()) return r.status();
    out.data[chosen] = RoundTo(out.type(), r->at(0));
  }
  return out;
}

}  // namespace

void RegisterReductions(OpTable& t) {
  t[static_cast<size_t>(Opcode::kReduce)] = Reduce;
  t[static_cast<size_t>(Opcode::kReduceWindow)] = ReduceWindow;
  t[static_cast<size_t>(Opcode::kSelectAndScatter)] = SelectAndScatter;
}

}  // namespace tpusim::eval
