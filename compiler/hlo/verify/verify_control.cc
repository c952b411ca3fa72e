// Verifier rules for tuples, calls, control flow, sort and collectives.
#include <set>

#include "compiler/hlo/verify/verifier_impl.h"

namespace tpusim::hlo::verify {
namespace {

std::vector<Shape> OperandShapes(const HloInstruction& i, size_t from = 0) {
  std::vector<Shape> out;
  for (size_t k = from; k < i.operand_count(); ++k) out.push_back(i.operand(k)->shape());
  return out;
}

Shape MaybeTuple(const std::vector<Shape>& s) { return s.size() == 1 ? s[0] : Shape::Tuple(s); }

Status VerifyConditional(const HloInstruction& i) {
  if (i.operand_count() < 1) return Error(i, "conditional needs a predicate or branch index");
  const Shape& sel = i.operand(0)->shape();
  std::vector<HloComputation*> branches = i.branch_computations();
  bool by_pred = sel.type == PrimitiveType::kPred;
  if (!sel.IsScalar() || (!by_pred && sel.type != PrimitiveType::kS32)) {
    return Error(i, "the first operand must be pred[] or s32[], not " + Str(sel));
  }
  if (by_pred && branches.size() != 2) {
    return Error(i, "a pred conditional needs true_computation and false_computation");
  }
  if (branches.empty() || branches.size() + 1 != i.operand_count()) {
    return Error(i, "conditional has " + Str(branches.size()) + " branches but " +
                        Str(static_cast<int64_t>(i.operand_count()) - 1) + " branch operands");
  }
  for (size_t b = 0; b < branches.size(); ++b) {
    HLO_RETURN_IF_ERROR(
        ExpectSignature(i, branches[b], "branch", {i.operand(b + 1)->shape()}, &i.shape()));
  }
  return Status::Ok();
}

std::optional<int64_t> GroupSize(const HloModule& m, const HloInstruction& i) {
  const ReplicaGroups* g = i.replica_groups();
  if (g && !g->groups.empty()) return static_cast<int64_t>(g->groups.front().size());
  if (m.replica_count > 1) return m.replica_count;
  return std::nullopt;
}

// A done's operand must be its start; returns element `element` of the start's result
// (-1: the whole result).
Status VerifyDone(const HloInstruction& i, Opcode start, int element) {
  const HloInstruction* s = i.operand(0);
  if (s->opcode() != start)
    return Error(i, "operand must be a " + std::string(OpcodeName(start)) + ", not %" + s->name());
  if (element < 0) return ExpectShape(i, s->shape());
  if (!s->shape().IsTuple() || s->shape().tuple_shapes.size() <= static_cast<size_t>(element))
    return Error(i, "operand's result is not a tuple of its start's form");
  return ExpectShape(i, s->shape().tuple_shapes[element]);
}

// A start whose result is a tuple (operand, result, then optional u32[] contexts).
Status ExpectStartTuple(const HloInstruction& i, const Shape& operand, const Shape& result) {
  const Shape& r = i.shape();
  bool ok = r.IsTuple() && r.tuple_shapes.size() >= 2 && r.tuple_shapes[0].Compatible(operand) &&
            r.tuple_shapes[1].Compatible(result);
  for (size_t k = 2; ok && k < r.tuple_shapes.size(); ++k)
    ok = r.tuple_shapes[k].Compatible(Shape::Array(PrimitiveType::kU32, {}));
  if (ok) return Status::Ok();
  return Error(i, "result shape is " + Str(r) + " but should be (" + Str(operand) + ", " +
                      Str(result) + "[, u32[]...])");
}

}  // namespace

Status VerifyControl(const HloModule&, const HloInstruction& i) {
  switch (i.opcode()) {
    case Opcode::kTuple:
      return ExpectShape(i, Shape::Tuple(OperandShapes(i)));
    case Opcode::kOptimizationBarrier:
      return ExpectShape(i, i.operand(0)->shape());
    case Opcode::kCopyStart:
      HLO_RETURN_IF_ERROR(ExpectArrayOperands(i));
      return ExpectStartTuple(i, i.operand(0)->shape(), i.operand(0)->shape());
    case Opcode::kCopyDone:
      return VerifyDone(i, Opcode::kCopyStart, 0);
    case Opcode::kGetTupleElement: {
      const Shape& t = i.operand(0)->shape();
      std::optional<int64_t> idx = i.GetInt("index");
      if (!t.IsTuple()) return Error(i, "operand is not a tuple: " + Str(t));
      if (!idx || *idx < 0 || *idx >= static_cast<int64_t>(t.tuple_shapes.size())) {
        return Error(
            i, "index must be within the tuple's " + Str(t.tuple_shapes.size()) + " elements");
      }
      return ExpectShape(i, t.tuple_shapes[*idx]);
    }
    case Opcode::kCall:
    case Opcode::kFusion: {
      const char* role = i.opcode() == Opcode::kCall ? "to_apply" : "calls";
      if (i.opcode() == Opcode::kFusion && !i.GetWord("kind")) {
        return Error(i, "fusion needs kind=kLoop|kInput|kOutput|kCustom");
      }
      return ExpectSignature(i, i.CalledComputation(role), role, OperandShapes(i), &i.shape());
    }
    case Opcode::kWhile: {
      const Shape& s = i.operand(0)->shape();
      Shape pred = Shape::Array(PrimitiveType::kPred, {});
      HLO_RETURN_IF_ERROR(ExpectSignature(i, i.condition(), "condition", {s}, &pred));
      HLO_RETURN_IF_ERROR(ExpectSignature(i, i.body(), "body", {s}, &s));
      return ExpectShape(i, s);
    }
    case Opcode::kConditional:
      return VerifyConditional(i);
    case Opcode::kSort: {
      HLO_RETURN_IF_ERROR(ExpectArrayOperands(i));
      if (i.operand_count() == 0) return Error(i, "sort needs operands");
      const IntList* dims;
      HLO_RETURN_IF_ERROR(RequireIntList(i, "dimensions", &dims));
      const Shape& a = i.operand(0)->shape();
      if (dims->size() != 1) return Error(i, "sort needs one dimension");
      HLO_RETURN_IF_ERROR(ExpectDims(i, *dims, a.rank(), "sort dimension"));
      std::vector<Shape> params;
      for (const HloInstruction* op : i.operands()) {
        if (op->shape().dims != a.dims) return Error(i, "sort operands have different dimensions");
        params.push_back(Shape::Array(op->shape().type, {}));
        params.push_back(Shape::Array(op->shape().type, {}));
      }
      Shape pred = Shape::Array(PrimitiveType::kPred, {});
      HLO_RETURN_IF_ERROR(ExpectSignature(i, i.to_apply(), "to_apply", params, &pred));
      return ExpectShape(i, MaybeTuple(OperandShapes(i)));
    }
    default:
      return Status::Ok();
  }
}

Status VerifyCollective(const HloModule& m, const HloInstruction& i) {
  switch (i.opcode()) {
    case Opcode::kAllReduceDone:
      return VerifyDone(i, Opcode::kAllReduceStart, -1);
    case Opcode::kAllGatherDone:
      return VerifyDone(i, Opcode::kAllGatherStart, 1);
    case Opcode::kReduceScatterDone:
      return VerifyDone(i, Opcode::kReduceScatterStart, 1);
    case Opcode::kCollectivePermuteDone:
      return VerifyDone(i, Opcode::kCollectivePermuteStart, 1);
    default:
      break;
  }
  HLO_RETURN_IF_ERROR(ExpectArrayOperands(i));
  if (i.operand_count() == 0) return Error(i, "a collective needs operands");
  if (const ReplicaGroups* g = i.replica_groups()) {
    std::set<int64_t> seen;
    for (const auto& group : g->groups) {
      if (group.size() != g->groups.front().size()) {
        return Error(i, "replica groups have different sizes");
      }
      for (int64_t id : group) {
        if (id < 0 || !seen.insert(id).second) {
          return Error(i, "replica id " + Str(id) + " is negative or in two groups");
        }
        int64_t devices = m.replica_count * m.num_partitions;
        if (devices > 1 && id >= devices) {
          return Error(
              i, "replica id " + Str(id) + " is beyond the module's " + Str(devices) + " devices");
        }
      }
    }
  }
  std::vector<Shape> ins = OperandShapes(i);
  switch (i.opcode()) {
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart: {
      std::vector<Shape> params;
      for (const Shape& s : ins) params.push_back(Shape::Array(s.type, {}));
      Shape root = params.front();
      params.push_back(params.front());
      if (ins.size() == 1) {
        HLO_RETURN_IF_ERROR(ExpectSignature(i, i.to_apply(), "to_apply", params, &root));
      } else if (!i.to_apply()) {
        return Error(i, "missing to_apply=%computation");
      }
      return ExpectShape(i, MaybeTuple(ins));
    }
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kReduceScatter:
    case Opcode::kReduceScatterStart: {
      const IntList* dims;
      HLO_RETURN_IF_ERROR(RequireIntList(i, "dimensions", &dims));
      if (dims->size() != 1) return Error(i, "needs exactly one dimension");
      HLO_RETURN_IF_ERROR(ExpectDims(i, *dims, ins[0].rank(), "dimension"));
      std::optional<int64_t> n = GroupSize(m, i);
      if (!n || *n == 0) return Status::Ok();
      std::vector<Shape> outs = ins;
      for (Shape& s : outs) {
        s.layout.reset();
        if (s.rank() <= (*dims)[0]) return Error(i, "operands have different ranks");
        int64_t& d = s.dims[(*dims)[0]];
        if (i.opcode() != Opcode::kReduceScatter && i.opcode() != Opcode::kReduceScatterStart) {
          if (Wide(d) * *n > (Wide(1) << 62)) return Error(i, "gathered size overflows");
          d *= *n;
        } else if (d % *n != 0) {
          return Error(
              i, "dimension size " + Str(d) + " is not divisible by the group size " + Str(*n));
        } else {
          d /= *n;
        }
      }
      if (i.opcode() == Opcode::kAllGatherStart)
        return ExpectStartTuple(i, MaybeTuple(ins), MaybeTuple(outs));
      if (i.opcode() == Opcode::kReduceScatterStart)  // XLA's async wrapper: ((operands), result)
        return ExpectStartTuple(i, Shape::Tuple(ins), MaybeTuple(outs));
      return ExpectShape(i, MaybeTuple(outs));
    }
    case Opcode::kAllToAll: {
      // The array form splits `dimensions`={d} of its operand into one part per member.
      if (!i.dimensions()) return ExpectShape(i, MaybeTuple(ins));
      const IntList& dims = *i.dimensions();
      if (dims.size() != 1 || ins.size() != 1) return Error(i, "needs exactly one dimension");
      HLO_RETURN_IF_ERROR(ExpectDims(i, dims, ins[0].rank(), "dimension"));
      std::optional<int64_t> n = GroupSize(m, i);
      if (n && *n > 0 && ins[0].dims[static_cast<size_t>(dims[0])] % *n != 0)
        return Error(i, "dimension size " + Str(ins[0].dims[static_cast<size_t>(dims[0])]) +
                            " is not divisible by the group size " + Str(*n));
      return ExpectShape(i, ins[0]);
    }
    case Opcode::kCollectivePermuteStart:
      return ExpectStartTuple(i, ins[0], ins[0]);
    default:
      return ExpectShape(i, MaybeTuple(ins));  // collective-permute
  }
}

}  // namespace tpusim::hlo::verify
