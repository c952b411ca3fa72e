// Data movement: broadcast, reshape, bitcast, copy, transpose, reverse, slice, dynamic
// slices, concatenate, pad. Each output element is read from a computed input index.
#include <algorithm>

#include "compiler/eval/interpreter.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// out[idx] = in[source(idx)] for every output index.
template <typename F>
Value Gather(const hlo::Shape& shape, const Value& in, F source) {
  Value out = Value::Zeros(shape);
  std::vector<int64_t> idx(out.shape.rank(), 0), in_idx(in.shape.rank(), 0);
  std::vector<int64_t> in_strides = Strides(in.dims());
  for (int64_t i = 0; i < out.size(); ++i, NextIndex(idx, out.dims())) {
    source(idx, in_idx);
    out.data[i] = in.data[Linear(in_idx, in_strides)];
  }
  return out;
}

const std::vector<int64_t> kNone;
const std::vector<int64_t>& Dims(const HloInstruction& instr) {
  return instr.dimensions() ? *instr.dimensions() : kNone;
}

Result<Value> Broadcast(const HloInstruction& instr, Operands ops, Interpreter&) {
  const std::vector<int64_t>& dims = Dims(instr);
  return Gather(instr.shape(), *ops[0], [&](const auto& idx, auto& in) {
    for (size_t k = 0; k < dims.size(); ++k) in[k] = idx[dims[k]];
  });
}

Result<Value> Reshape(const HloInstruction& instr, Operands ops, Interpreter&) {
  if (instr.shape().IsTuple()) return *ops[0];
  if (instr.shape().ElementCount() != ops[0]->size()) {
    return InstrError(instr, "element count changes");
  }
  Value out = *ops[0];
  out.shape = instr.shape();
  out.shape.layout.reset();
  return out;
}

Result<Value> Transpose(const HloInstruction& instr, Operands ops, Interpreter&) {
  const std::vector<int64_t>& perm = Dims(instr);
  return Gather(instr.shape(), *ops[0], [&](const auto& idx, auto& in) {
    for (size_t k = 0; k < perm.size(); ++k) in[perm[k]] = idx[k];
  });
}

Result<Value> Reverse(const HloInstruction& instr, Operands ops, Interpreter&) {
  const std::vector<int64_t>& dims = Dims(instr);
  const std::vector<int64_t>& n = ops[0]->dims();
  return Gather(instr.shape(), *ops[0], [&](const auto& idx, auto& in) {
    in = idx;
    for (int64_t d : dims) in[d] = n[d] - 1 - idx[d];
  });
}

Result<Value> Slice(const HloInstruction& instr, Operands ops, Interpreter&) {
  const hlo::SliceBounds* s = instr.slice();
  if (s == nullptr) return InstrError(instr, "missing slice attribute");
  return Gather(instr.shape(), *ops[0], [&](const auto& idx, auto& in) {
    for (size_t d = 0; d < idx.size(); ++d) in[d] = (*s)[d].start + idx[d] * (*s)[d].stride;
  });
}

// Start indices from scalar operands ops[first...] (or one index vector), clamped so that a
// block of `sizes` fits inside `dims`, as XLA does.
std::vector<int64_t> Starts(Operands ops, size_t first, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& sizes) {
  std::vector<int64_t> starts;
  for (size_t i = first; i < ops.size(); ++i) {
    for (double x : ops[i]->data) starts.push_back(static_cast<int64_t>(x));
  }
  starts.resize(dims.size(), 0);
  for (size_t d = 0; d < dims.size(); ++d) {
    starts[d] = std::clamp<int64_t>(starts[d], 0, std::max<int64_t>(0, dims[d] - sizes[d]));
  }
  return starts;
}

Result<Value> DynamicSlice(const HloInstruction& instr, Operands ops, Interpreter&) {
  std::vector<int64_t> starts = Starts(ops, 1, ops[0]->dims(), instr.shape().dims);
  return Gather(instr.shape(), *ops[0], [&](const auto& idx, auto& in) {
    for (size_t d = 0; d < idx.size(); ++d) in[d] = starts[d] + idx[d];
  });
}

Result<Value> DynamicUpdateSlice(const HloInstruction&, Operands ops, Interpreter&) {
  const Value& update = *ops[1];
  Value out = *ops[0];
  std::vector<int64_t> starts = Starts(ops, 2, out.dims(), update.dims());
  std::vector<int64_t> idx(update.shape.rank(), 0), at(idx.size());
  std::vector<int64_t> strides = Strides(out.dims());
  for (int64_t i = 0; i < update.size(); ++i, NextIndex(idx, update.dims())) {
    for (size_t d = 0; d < idx.size(); ++d) at[d] = starts[d] + idx[d];
    out.data[Linear(at, strides)] = update.data[i];
  }
  return out;
}

Result<Value> Concatenate(const HloInstruction& instr, Operands ops, Interpreter&) {
  if (Dims(instr).size() != 1) return InstrError(instr, "needs one dimension");
  int64_t dim = Dims(instr)[0];
  Value out = Value::Zeros(instr.shape());
  std::vector<int64_t> strides = Strides(out.dims());
  int64_t offset = 0;
  for (const Value* op : ops) {
    std::vector<int64_t> idx(op->shape.rank(), 0);
    for (int64_t i = 0; i < op->size(); ++i, NextIndex(idx, op->dims())) {
      std::vector<int64_t> at = idx;
      at[dim] += offset;
      out.data[Linear(at, strides)] = op->data[i];
    }
    offset += op->dims()[dim];
  }
  return out;
}

Result<Value> Pad(const HloInstruction& instr, Operands ops, Interpreter&) {
  const hlo::PaddingConfig* pad = instr.padding();
  if (pad == nullptr) return InstrError(instr, "missing padding attribute");
  const Value& in = *ops[0];
  Value out = Value::Zeros(instr.shape());
  std::fill(out.data.begin(), out.data.end(), ops[1]->scalar());
  std::vector<int64_t> strides = Strides(out.dims());
  std::vector<int64_t> idx(in.shape.rank(), 0), at(idx.size());
  for (int64_t i = 0; i < in.size(); ++i, NextIndex(idx, in.dims())) {
    bool inside = true;
    for (size_t d = 0; d < idx.size(); ++d) {
      at[d] = (*pad)[d].low + idx[d] * ((*pad)[d].interior + 1);
      inside = inside && at[d] >= 0 && at[d] < out.dims()[d];
    }
    if (inside) out.data[Linear(at, strides)] = in.data[i];
  }
  return out;
}

}  // namespace

void RegisterDataMovement(OpTable& t) {
  t[static_cast<size_t>(Opcode::kBroadcast)] = Broadcast;
  t[static_cast<size_t>(Opcode::kReshape)] = Reshape;
  t[static_cast<size_t>(Opcode::kBitcast)] = Reshape;
  t[static_cast<size_t>(Opcode::kCopy)] = Reshape;
  t[static_cast<size_t>(Opcode::kTranspose)] = Transpose;
  t[static_cast<size_t>(Opcode::kReverse)] = Reverse;
  t[static_cast<size_t>(Opcode::kSlice)] = Slice;
  t[static_cast<size_t>(Opcode::kDynamicSlice)] = DynamicSlice;
  t[static_cast<size_t>(Opcode::kDynamicUpdateSlice)] = DynamicUpdateSlice;
  t[static_cast<size_t>(Opcode::kConcatenate)] = Concatenate;
  t[static_cast<size_t>(Opcode::kPad)] = Pad;
}

}  // namespace tpusim::eval
