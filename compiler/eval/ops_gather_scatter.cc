// Gather and scatter with XLA's general dimension numbers, including operand batching
// dimensions. Gather clamps start indices so the slice fits; scatter skips update elements
// that land outside the operand.
#include <algorithm>

#include "compiler/eval/interpreter.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

std::vector<int64_t> Attr(const HloInstruction& instr, const char* key) {
  const hlo::IntList* l = instr.GetIntList(key);
  return l ? *l : std::vector<int64_t>{};
}

bool Has(const std::vector<int64_t>& v, int64_t x) { return std::count(v.begin(), v.end(), x) > 0; }

// Reads the index vector for the batch position `out` (the output/update index at `batch`
// dimensions). Fills `pos` (the start-indices position, index_vector_dim excluded).
std::vector<int64_t> IndexVector(const Value& indices, int64_t ivd, size_t count,
                                 const std::vector<int64_t>& batch, const std::vector<int64_t>& out,
                                 std::vector<int64_t>& pos) {
  int64_t rank = indices.shape.rank();
  pos.assign(rank, 0);
  for (int64_t d = 0, j = 0; d < rank; ++d) {
    if (d != ivd) pos[d] = out[batch[j++]];
  }
  std::vector<int64_t> s(count, 0);
  std::vector<int64_t> p = pos;
  for (size_t k = 0; k < count; ++k) {
    if (ivd < rank) p[ivd] = static_cast<int64_t>(k);
    s[k] = static_cast<int64_t>(indices.at(p));
  }
  return s;
}

Result<Value> Gather(const HloInstruction& instr, Operands ops, Interpreter&) {
  const Value &operand = *ops[0], &indices = *ops[1];
  std::vector<int64_t> offset_dims = Attr(instr, "offset_dims"),
                       collapsed = Attr(instr, "collapsed_slice_dims"),
                       index_map = Attr(instr, "start_index_map"),
                       sizes = Attr(instr, "slice_sizes"),
                       op_batch = Attr(instr, "operand_batching_dims"),
                       idx_batch = Attr(instr, "start_indices_batching_dims");
  int64_t ivd = instr.GetInt("index_vector_dim").value_or(indices.shape.rank());
  if (static_cast<int64_t>(sizes.size()) != operand.shape.rank()) {
    return InstrError(instr, "slice_sizes needs one entry per operand dimension");
  }
  Value out = Value::Zeros(instr.shape());
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < out.shape.rank(); ++d) {
    if (!Has(offset_dims, d)) batch.push_back(d);
  }
  std::vector<int64_t> idx(out.shape.rank(), 0), in(operand.shape.rank()), pos;
  std::vector<int64_t> strides = Strides(operand.dims());
  for (int64_t o = 0; o < out.size(); ++o, NextIndex(idx, out.dims())) {
    std::vector<int64_t> s = IndexVector(indices, ivd, index_map.size(), batch, idx, pos);
    std::fill(in.begin(), in.end(), 0);
    for (size_t k = 0; k < index_map.size(); ++k) {
      int64_t d = index_map[k];
      in[d] = std::clamp<int64_t>(s[k], 0, operand.dims()[d] - sizes[d]);
    }
    for (int64_t d = 0, j = 0; d < operand.shape.rank(); ++d) {
      if (!Has(collapsed, d) && !Has(op_batch, d)) in[d] += idx[offset_dims[j++]];
    }
    for (size_t i = 0; i < op_batch.size(); ++i) in[op_batch[i]] = pos[idx_batch[i]];
    out.data[o] = operand.data[Linear(in, strides)];
  }
  return out;
}

Result<Value> Scatter(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  size_t n = (ops.size() - 1) / 2;
  const hlo::HloComputation* f = instr.to_apply();
  if (f == nullptr || n == 0) return InstrError(instr, "needs to_apply");
  const Value& indices = *ops[n];
  std::vector<int64_t> window_dims = Attr(instr, "update_window_dims"),
                       inserted = Attr(instr, "inserted_window_dims"),
                       to_operand = Attr(instr, "scatter_dims_to_operand_dims"),
                       op_batch = Attr(instr, "input_batching_dims"),
                       idx_batch = Attr(instr, "scatter_indices_batching_dims");
  int64_t ivd = instr.GetInt("index_vector_dim").value_or(indices.shape.rank());
  std::vector<Value> outs;
  for (size_t j = 0; j < n; ++j) outs.push_back(*ops[j]);
  const Value& update0 = *ops[n + 1];
  const std::vector<int64_t>& odims = outs[0].dims();
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < update0.shape.rank(); ++d) {
    if (!Has(window_dims, d)) batch.push_back(d);
  }
  std::vector<PrimitiveType> types;
  for (size_t j = 0; j < 2 * n; ++j) types.push_back(outs[j % n].type());
  std::vector<int64_t> idx(update0.shape.rank(), 0), in(odims.size()), pos;
  std::vector<int64_t> strides = Strides(odims);
  std::vector<double> args(2 * n);
  for (int64_t u = 0; u < update0.size(); ++u, NextIndex(idx, update0.dims())) {
    std::vector<int64_t> s = IndexVector(indices, ivd, to_operand.size(), batch, idx, pos);
    std::fill(in.begin(), in.end(), 0);
    for (size_t k = 0; k < to_operand.size(); ++k) in[to_operand[k]] = s[k];
    for (int64_t d = 0, j = 0; d < static_cast<int64_t>(odims.size()); ++d) {
      if (!Has(inserted, d) && !Has(op_batch, d)) in[d] += idx[window_dims[j++]];
    }
    for (size_t i = 0; i < op_batch.size(); ++i) in[op_batch[i]] = pos[idx_batch[i]];
    bool inside = true;
    for (size_t d = 0; d < odims.size(); ++d) inside = inside && in[d] >= 0 && in[d] < odims[d];
    if (!inside) continue;
    int64_t at = Linear(in, strides);
    for (size_t j = 0; j < n; ++j)
      args[j] = outs[j].data[at], args[n + j] = ops[n + 1 + j]->data[u];
    Result<std::vector<double>> r = interp.CallScalar(*f, args, types);
    if (!r.ok()) return r.status();
    for (size_t j = 0; j < n; ++j) outs[j].data[at] = RoundTo(outs[j].type(), r->at(j));
  }
  if (instr.shape().IsTuple()) return Value::Tuple(std::move(outs));
  return std::move(outs[0]);
}

}  // namespace

void RegisterGatherScatter(OpTable& t) {
  t[static_cast<size_t>(Opcode::kGather)] = Gather;
  t[static_cast<size_t>(Opcode::kScatter)] = Scatter;
}

}  // namespace tpusim::eval
