// sort: a stable sort of one dimension of N same-shaped operands, ordered by an HLO
// comparator over 2N scalars (lhs0, rhs0, lhs1, rhs1, ...).
#include <algorithm>
#include <numeric>

#include "compiler/eval/interpreter.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

Result<Value> Sort(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  const hlo::HloComputation* cmp = instr.to_apply();
  if (cmp == nullptr || instr.dimensions() == nullptr || instr.dimensions()->size() != 1) {
    return InstrError(instr, "needs to_apply and one dimension");
  }
  int64_t dim = (*instr.dimensions())[0];
  size_t n = ops.size();
  const std::vector<int64_t>& dims = ops[0]->dims();
  std::vector<int64_t> strides = Strides(dims);
  std::vector<Value> outs;
  for (const Value* op : ops) outs.push_back(*op);
  std::vector<PrimitiveType> types;
  for (size_t j = 0; j < 2 * n; ++j) types.push_back(ops[j / 2]->type());
  // Iterate over every line along `dim`: indices with idx[dim] == 0.
  std::vector<int64_t> outer = dims;
  outer[dim] = 1;
  std::vector<int64_t> idx(dims.size(), 0), order(dims[dim]);
  std::vector<double> args(2 * n);
  Status status;
  int64_t lines = 1;
  for (int64_t d : outer) lines *= d;
  for (int64_t line = 0; line < lines; ++line, NextIndex(idx, outer)) {
    int64_t base = Linear(idx, strides), step = strides[dim];
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (!status.ok()) return false;
      for (size_t j = 0; j < n; ++j) {
        args[2 * j] = ops[j]->data[base + a * step];
        args[2 * j + 1] = ops[j]->data[base + b * step];
      }
      Result<std::vector<double>> r = interp.CallScalar(*cmp, args, types);
      if (!r.ok()) status = r.status();
      return r.ok() && r->at(0) != 0;
    });
    if (!status.ok()) return status;
    for (size_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < dims[dim]; ++i) {
        outs[j].data[base + i * step] = ops[j]->data[base + order[i] * step];
      }
    }
  }
  if (instr.shape().IsTuple()) return Value::Tuple(std::move(outs));
  return std::move(outs[0]);
}

}  // namespace

void RegisterSort(OpTable& t) { t[static_cast<size_t>(Opcode::kSort)] = Sort; }

}  // namespace tpusim::eval
