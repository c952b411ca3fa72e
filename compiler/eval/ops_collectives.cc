// Collectives across replicas: all-reduce, all-gather, reduce-scatter, collective-permute,
// all-to-all.
// Every replica hands its operands to the rendezvous (Interpreter::Exchange) and computes
// its own result from its group's values; reductions fold in replica-group order.
#include <algorithm>

#include "compiler/eval/interpreter.h"
#include "compiler/eval/rendezvous.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// The replica group holding this replica (all replicas when replica_groups is empty).
Result<std::vector<int64_t>> Group(const HloInstruction& instr, Interpreter& interp) {
  std::vector<int64_t> all(interp.replica_count());
  for (int64_t i = 0; i < interp.replica_count(); ++i) all[i] = i;
  const hlo::ReplicaGroups* g = instr.replica_groups();
  if (g == nullptr || g->groups.empty()) return all;
  for (const std::vector<int64_t>& group : g->groups) {
    for (int64_t r : group) {
      if (r < 0 || r >= interp.replica_count()) {
        return InstrError(instr, "replica group names replica " + std::to_string(r) + " but " +
                                     std::to_string(interp.replica_count()) +
                                     " replicas run (use EvaluateReplicated)");
      }
    }
    if (std::count(group.begin(), group.end(), interp.replica_id())) return group;
  }
  return InstrError(instr, "replica " + std::to_string(interp.replica_id()) + " is in no group");
}

Value Pack(Operands ops) {
  if (ops.size() == 1) return *ops[0];
  std::vector<Value> v;
  for (const Value* op : ops) v.push_back(*op);
  return Value::Tuple(std::move(v));
}

// Replica r's contribution; a single value stands for every replica (EvaluateMirrored).
const Value& Of(const std::vector<Value>& all, int64_t r) {
  return all.size() == 1 ? all[0] : all[static_cast<size_t>(r)];
}

// Operand j of replica r's contribution.
const Value& Part(const std::vector<Value>& all, int64_t r, size_t j, size_t n) {
  return n == 1 ? Of(all, r) : Of(all, r).elements[j];
}

// Elementwise fold of operand j over the group, in group order.
Result<Value> Fold(const HloInstruction& instr, Interpreter& interp, const std::vector<Value>& all,
                   const std::vector<int64_t>& group, size_t j, size_t n) {
  const hlo::HloComputation* f = instr.to_apply();
  if (f == nullptr) return InstrError(instr, "needs to_apply");
  Value acc = Part(all, group[0], j, n);
  PrimitiveType types[2] = {acc.type(), acc.type()};
  for (size_t g = 1; g < group.size(); ++g) {
    const Value& v = Part(all, group[g], j, n);
    for (int64_t i = 0; i < acc.size(); ++i) {
      double args[2] = {acc.data[i], v.data[i]}, result;
      Status s = interp.CallScalar(*f, args, types, std::span<double>(&result, 1));
      if (!s.ok()) return s;
      acc.data[i] = RoundTo(acc.type(), result);
    }
  }
  return acc;
}

Value Unpack(std::vector<Value> outs) {
  if (outs.size() == 1) return std::move(outs[0]);
  return Value::Tuple(std::move(outs));
}

int64_t Dim(const HloInstruction& instr) {
  const hlo::IntList* d = instr.dimensions();
  return d && !d->empty() ? (*d)[0] : 0;
}

Result<Value> AllReduce(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  Result<std::vector<int64_t>> group = Group(instr, interp);
  if (!group.ok()) return group.status();
  Result<Exchanged> all = interp.Exchange(instr, Pack(ops));
  if (!all.ok()) return all.status();
  std::vector<Value> outs;
  for (size_t j = 0; j < ops.size(); ++j) {
    Result<Value> r = Fold(instr, interp, **all, *group, j, ops.size());
    if (!r.ok()) return r.status();
    outs.push_back(std::move(*r));
  }
  return Unpack(std::move(outs));
}

// Copies `part` into block k (of part's width) along `dim` of `big`, or back.
void CopyBlock(Value& part, Value& big, int64_t dim, int64_t k, bool into_big) {
  std::vector<int64_t> idx(part.shape.rank(), 0), at(idx.size());
  std::vector<int64_t> strides = Strides(big.dims());
  int64_t width = part.dims()[dim];
  for (int64_t i = 0; i < part.size(); ++i, NextIndex(idx, part.dims())) {
    at = idx;
    at[dim] += k * width;
    double& b = big.data[Linear(at, strides)];
    if (into_big) {
      b = part.data[i];
    } else {
      part.data[i] = b;
    }
  }
}

// The gathered value of shape `shape` (all-gather's result, or all-gather-start's element 1).
Result<Value> GatherInto(const HloInstruction& instr, Operands ops, Interpreter& interp,
                         const hlo::Shape& shape) {
  Result<std::vector<int64_t>> group = Group(instr, interp);
  if (!group.ok()) return group.status();
  Result<Exchanged> all = interp.Exchange(instr, Pack(ops));
  if (!all.ok()) return all.status();
  std::vector<Value> outs;
  for (size_t j = 0; j < ops.size(); ++j) {
    const hlo::Shape& s = ops.size() == 1 ? shape : shape.tuple_shapes.at(j);
    Value out = Value::Zeros(s);
    for (size_t g = 0; g < group->size(); ++g) {
      Value part = Part(**all, (*group)[g], j, ops.size());
      CopyBlock(part, out, Dim(instr), static_cast<int64_t>(g), true);
    }
    outs.push_back(std::move(out));
  }
  return Unpack(std::move(outs));
}

Result<Value> AllGather(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  return GatherInto(instr, ops, interp, instr.shape());
}

// `shape`: the result's (the instruction's own, or element 1 of a reduce-scatter-start).
Result<Value> ScatterInto(const HloInstruction& instr, Operands ops, Interpreter& interp,
                          const hlo::Shape& shape) {
  Result<std::vector<int64_t>> group = Group(instr, interp);
  if (!group.ok()) return group.status();
  Result<Exchanged> all = interp.Exchange(instr, Pack(ops));
  if (!all.ok()) return all.status();
  int64_t me = std::find(group->begin(), group->end(), interp.replica_id()) - group->begin();
  std::vector<Value> outs;
  for (size_t j = 0; j < ops.size(); ++j) {
    Result<Value> sum = Fold(instr, interp, **all, *group, j, ops.size());
    if (!sum.ok()) return sum.status();
    const hlo::Shape& s = ops.size() == 1 ? shape : shape.tuple_shapes.at(j);
    Value out = Value::Zeros(s);
    CopyBlock(out, *sum, Dim(instr), me, false);
    outs.push_back(std::move(out));
  }
  return Unpack(std::move(outs));
}

Result<Value> ReduceScatter(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  return ScatterInto(instr, ops, interp, instr.shape());
}

// Member m of the group receives chunk m of every member's operand (split along
// `dimensions`, concatenated in member order along it), or in the tuple form operand m of
// every member, one per result element.
Result<Value> AllToAll(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  Result<std::vector<int64_t>> group = Group(instr, interp);
  if (!group.ok()) return group.status();
  Result<Exchanged> all = interp.Exchange(instr, Pack(ops));
  if (!all.ok()) return all.status();
  const int64_t n = static_cast<int64_t>(group->size());
  const int64_t me = std::find(group->begin(), group->end(), interp.replica_id()) - group->begin();
  if (ops.size() > 1 || !instr.dimensions()) {  // tuple form
    if (static_cast<int64_t>(ops.size()) != n) {
      return InstrError(instr, "the tuple form needs one operand per group member");
    }
    std::vector<Value> outs;
    for (int64_t m = 0; m < n; ++m) outs.push_back(Part(**all, (*group)[m], me, ops.size()));
    return Value::Tuple(std::move(outs));
  }
  const int64_t d = Dim(instr);
  if (d < 0 || d >= instr.shape().rank() || instr.shape().dims[d] % n) {
    return InstrError(instr, "split dimension does not divide into the group's members");
  }
  hlo::Shape chunk_shape = instr.shape();
  chunk_shape.dims[d] /= n;
  Value out = Value::Zeros(instr.shape());
  for (int64_t m = 0; m < n; ++m) {
    Value chunk = Value::Zeros(chunk_shape);
    Value from = Of(**all, (*group)[m]);
    CopyBlock(chunk, from, d, me, false);
    CopyBlock(chunk, out, d, m, true);
  }
  return out;
}

// Replica t receives the operand of the replica s with (s, t) in source_target_pairs, or
// zeros when no pair targets it.
Result<Value> PermuteInto(const HloInstruction& instr, Operands ops, Interpreter& interp,
                          const hlo::Shape& shape) {
  Result<Exchanged> all = interp.Exchange(instr, *ops[0]);
  if (!all.ok()) return all.status();
  if (const hlo::PairList* pairs = instr.source_target_pairs()) {
    for (auto [s, t] : *pairs) {
      if (s < 0 || t < 0 || s >= interp.replica_count() || t >= interp.replica_count()) {
        return InstrError(instr, "pair {" + std::to_string(s) + "," + std::to_string(t) +
                                     "} names a replica that does not run");
      }
      if (t == interp.replica_id()) return Of(**all, s);
    }
  }
  return Value::Zeros(shape);
}

Result<Value> CollectivePermute(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  return PermuteInto(instr, ops, interp, instr.shape());
}

// An async start's tuple: the operand(s), the result, then a u32[] 0 for each context.
Value StartTuple(const HloInstruction& instr, Operands ops, Value result) {
  std::vector<Value> operands;
  for (const Value* o : ops) operands.push_back(*o);
  std::vector<Value> elements = {Unpack(std::move(operands)), std::move(result)};
  for (size_t k = 2; k < instr.shape().tuple_shapes.size(); ++k)
    elements.push_back(Value::Zeros(instr.shape().tuple_shapes[k]));
  return Value::Tuple(std::move(elements));
}

Result<Value> AllGatherStart(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  Result<Value> r = GatherInto(instr, ops, interp, instr.shape().tuple_shapes.at(1));
  if (!r.ok()) return r.status();
  return StartTuple(instr, ops, std::move(*r));
}

Result<Value> CollectivePermuteStart(const HloInstruction& instr, Operands ops,
                                     Interpreter& interp) {
  Result<Value> r = PermuteInto(instr, ops, interp, instr.shape().tuple_shapes.at(1));
  if (!r.ok()) return r.status();
  return StartTuple(instr, ops, std::move(*r));
}

// XLA's async reduce-scatter: ((operands), result).
Result<Value> ReduceScatterStart(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  Result<Value> r = ScatterInto(instr, ops, interp, instr.shape().tuple_shapes.at(1));
  if (!r.ok()) return r.status();
  std::vector<Value> operands;
  for (const Value* o : ops) operands.push_back(*o);
  return Value::Tuple({Value::Tuple(std::move(operands)), std::move(*r)});
}

// A done: the start's result (all-reduce) or its element 1.
Result<Value> Done(const HloInstruction& instr, Operands ops, Interpreter&) {
  if (instr.opcode() == Opcode::kAllReduceDone) return *ops[0];
  return ops[0]->elements.at(1);
}

}  // namespace

void RegisterCollectives(OpTable& t) {
  t[static_cast<size_t>(Opcode::kAllReduce)] = AllReduce;
  t[static_cast<size_t>(Opcode::kAllGather)] = AllGather;
  t[static_cast<size_t>(Opcode::kReduceScatter)] = ReduceScatter;
  t[static_cast<size_t>(Opcode::kCollectivePermute)] = CollectivePermute;
  t[static_cast<size_t>(Opcode::kAllToAll)] = AllToAll;
  t[static_cast<size_t>(Opcode::kAllReduceStart)] = AllReduce;
  t[static_cast<size_t>(Opcode::kAllGatherStart)] = AllGatherStart;
  t[static_cast<size_t>(Opcode::kCollectivePermuteStart)] = CollectivePermuteStart;
  t[static_cast<size_t>(Opcode::kAllReduceDone)] = Done;
  t[static_cast<size_t>(Opcode::kAllGatherDone)] = Done;
  t[static_cast<size_t>(Opcode::kReduceScatterStart)] = ReduceScatterStart;
  t[static_cast<size_t>(Opcode::kReduceScatterDone)] = Done;
  t[static_cast<size_t>(Opcode::kCollectivePermuteDone)] = Done;
}

}  // namespace tpusim::eval
