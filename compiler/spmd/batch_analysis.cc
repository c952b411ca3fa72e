#include "compiler/spmd/batch_analysis.h"

#include <algorithm>
#include <map>
#include <utility>

namespace tpusim::spmd {

bool HasDim(const hlo::Shape& shape, int64_t batch) {
  if (shape.IsTuple())
    return std::any_of(shape.tuple_shapes.begin(), shape.tuple_shapes.end(),
                       [&](const hlo::Shape& s) { return HasDim(s, batch); });
  return std::find(shape.dims.begin(), shape.dims.end(), batch) != shape.dims.end();
}

namespace {

using Callers = std::map<const hlo::HloComputation*, const hlo::HloInstruction*>;

// The entry computation and every computation its while loops, calls and conditionals run
// (nested ones too), each with the instruction that runs it.
std::vector<const hlo::HloComputation*> RunComputations(const hlo::HloComputation& entry,
                                                        Callers& callers) {
  std::vector<const hlo::HloComputation*> comps = {&entry};
  for (size_t k = 0; k < comps.size(); ++k)
    for (const auto& i : comps[k]->instructions()) {
      std::vector<hlo::HloComputation*> run;
      if (i->opcode() == hlo::Opcode::kWhile && i->body()) run = {i->body()};
      if (i->opcode() == hlo::Opcode::kCall && i->to_apply()) run = {i->to_apply()};
      if (i->opcode() == hlo::Opcode::kConditional) run = i->branch_computations();
      for (const hlo::HloComputation* c : run)
        if (callers.emplace(c, i.get()).second) comps.push_back(c);
    }
  return comps;
}

// The entry parameter `v` is, through converts, copies, reshapes, bitcasts, tuples and the
// parameters of computations run by while, call and conditional (to the operand their
// caller passes); null when it is computed.
const hlo::HloInstruction* EntryParameter(const hlo::HloInstruction* v, const Callers& callers) {
  int64_t element = -1;  // of the tuple `v` is, once a get-tuple-element picked one
  for (;;) {
    switch (v->opcode()) {
      case hlo::Opcode::kConvert:
      case hlo::Opcode::kCopy:
      case hlo::Opcode::kReshape:
      case hlo::Opcode::kBitcast:
        v = v->operand(0);
        continue;
      case hlo::Opcode::kGetTupleElement:
        if (element >= 0) return nullptr;
        element = v->GetInt("index").value_or(-1);
        v = v->operand(0);
        continue;
      case hlo::Opcode::kTuple:
        if (element < 0 || element >= static_cast<int64_t>(v->operand_count())) return nullptr;
        v = v->operand(static_cast<size_t>(std::exchange(element, -1)));
        continue;
      case hlo::Opcode::kParameter: {
        if (v->parent() && v->parent()->is_entry()) return element < 0 ? v : nullptr;
        const auto it = callers.find(v->parent());
        if (it == callers.end()) return nullptr;
        const hlo::HloInstruction& c = *it->second;
        size_t operand = 0;  // a while's state
        if (c.opcode() == hlo::Opcode::kCall) operand = static_cast<size_t>(v->parameter_number());
        if (c.opcode() == hlo::Opcode::kConditional) {
          const auto branches = c.branch_computations();
          operand = static_cast<size_t>(std::find(branches.begin(), branches.end(), v->parent()) -
                                        branches.begin()) +
                    1;
        }
        if (operand >= c.operand_count()) return nullptr;
        v = c.operand(operand);
        continue;
      }
      default:
        return nullptr;
    }
  }
}

}  // namespace

std::set<const hlo::HloInstruction*> ParametersFeeding(const hlo::HloComputation& entry,
                                                       std::initializer_list<hlo::Opcode> users,
                                                       size_t index) {
  std::set<const hlo::HloInstruction*> params;
  Callers callers;
  for (const hlo::HloComputation* comp : RunComputations(entry, callers))
    for (const auto& i : comp->instructions()) {
      if (std::find(users.begin(), users.end(), i->opcode()) == users.end()) continue;
      if (index >= i->operand_count()) continue;
      if (const hlo::HloInstruction* p = EntryParameter(i->operand(index), callers))
        params.insert(p);
    }
  return params;
}

namespace {
constexpr std::initializer_list<hlo::Opcode> kContractions = {hlo::Opcode::kDot,
                                                              hlo::Opcode::kConvolution};

// Whether the devices' parts of `i`, each computed from its share of the batch and without
// the batch dimension, make the whole by an all-reduce: sums and maxima (reduces,
// contractions over the batch, batch-norm-grad's scale and offset gradients) and slices of
// the batch (the partitioner gathers their rows).
bool Combines(const hlo::HloInstruction& i) {
  using hlo::Opcode;
  const hlo::HloInstruction* op = &i;
  int64_t element = -1;  // of a multi-output fusion's tuple
  if (op->opcode() == Opcode::kGetTupleElement)
    element = op->GetInt("index").value_or(-1), op = op->operand(0);
  if (op->opcode() == Opcode::kFusion && op->fused_computation()) {
    op = op->fused_computation()->root();
    if (op->opcode() == Opcode::kTuple) {
      if (element < 0 || element >= static_cast<int64_t>(op->operand_count())) return false;
      op = op->operand(static_cast<size_t>(element));
    }
  } else if (element >= 0) {
    return op->opcode() == Opcode::kBatchNormGrad && (element == 1 || element == 2);
  }
  switch (op->opcode()) {
    case Opcode::kDot:
    case Opcode::kConvolution:
      return true;  // a contraction over the batch: partial sums
    case Opcode::kReduce: {
      const hlo::HloComputation* f = op->to_apply();
      return f && (f->root()->opcode() == Opcode::kAdd || f->root()->opcode() == Opcode::kMaximum);
    }
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
      return op == &i;
    case Opcode::kScatter:  // a scatter-add of each device's updates: partial sums
      return op->to_apply() && op->to_apply()->root()->opcode() == Opcode::kAdd;
    default:  // a concatenate, pad, gather, reduce-window, or elementwise work on a reduce
      return false;
  }
}
// A dynamic-slice in a loop (a while body or what it calls) that takes part of the leading
// dimension of an array shaped as `shape` at a start that is not a constant (the loop's
// step), or null.
const hlo::HloInstruction* IndexedAlongLeading(const hlo::HloModule& m, const hlo::Shape& shape) {
  std::vector<const hlo::HloComputation*> loops;
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode() == hlo::Opcode::kWhile && i->body()) loops.push_back(i->body());
    }
  }
  std::set<const hlo::HloComputation*> seen(loops.begin(), loops.end());
  for (size_t k = 0; k < loops.size(); ++k) {
    for (const auto& i : loops[k]->instructions()) {
      for (const hlo::HloComputation* called : i->called_computations()) {
        if (seen.insert(called).second) loops.push_back(called);
      }
      if (i->opcode() != hlo::Opcode::kDynamicSlice || i->operand_count() < 2 ||
          i->operand(0)->shape().dims != shape.dims || i->shape().dims.empty() ||
          i->shape().dims[0] == shape.dims[0] ||
          i->operand(1)->opcode() == hlo::Opcode::kConstant) {
        continue;
      }
      return i.get();
    }
  }
  return nullptr;
}

// A value whose leading dimension holds the batch as its major part: a reshape of [B, S, H]
// into [B*S, H] (a dense layer over a sequence), or any op on such a value that keeps that
// leading dimension. Each device's rows stay contiguous (the partitioner's reshape rule).
bool MergesBatchMajor(const hlo::HloInstruction& i, int64_t b) {
  const hlo::Shape& s = i.shape();
  if (!s.IsArray() || s.dims.empty() || s.dims[0] <= b || s.dims[0] % b != 0) return false;
  for (const hlo::HloInstruction* o : i.operands()) {
    const hlo::Shape& os = o->shape();
    if (!os.IsArray() || os.dims.empty()) continue;
    if (os.dims[0] == b && os.ElementCount() == s.ElementCount()) return true;  // the merge
    if (os.dims[0] == s.dims[0]) return true;  // keeps the merged rows
  }
  return false;
}

}  // namespace

BatchAnalysis AnalyzeBatch(const hlo::HloModule& module, int64_t cores) {
  const hlo::HloComputation& entry = *module.entry();
  BatchAnalysis a;
  std::set<const hlo::HloInstruction*> carrying;
  const std::vector<hlo::HloInstruction*> params = entry.parameters();
  std::set<const hlo::HloInstruction*> weights = ParametersFeeding(entry, kContractions, 1);
  // Tables a gather looks rows up in (embeddings) are weights too.
  for (const hlo::HloInstruction* t : ParametersFeeding(entry, {hlo::Opcode::kGather}, 0))
    weights.insert(t);
  const std::set<const hlo::HloInstruction*> activations =
      ParametersFeeding(entry, kContractions, 0);
  // Optimizer state (momentum, Adam moments) has its weight's shape: not an input either.
  std::set<std::vector<int64_t>> weight_shapes;
  for (const hlo::HloInstruction* w : weights) weight_shapes.insert(w->shape().dims);
  for (const hlo::HloInstruction* p : params)
    if (p->shape().IsArray() && p->shape().rank() >= 2 && !activations.count(p) &&
        weight_shapes.count(p->shape().dims))
      weights.insert(p);
  // Token ids are integers, tables and their optimizer state floats: an integer input of
  // rank >= 2 names the batch before any float one (BERT's position table [128, 768] is
  // added by broadcast, not looked up, and its Adam moments follow the inputs).
  const auto last_input = [&](bool integral_only) {
    const hlo::HloInstruction* last = nullptr;
    for (const hlo::HloInstruction* p : params)
      if (p->shape().IsArray() && p->shape().rank() >= 2 && !weights.count(p) &&
          (!integral_only || hlo::IsIntegralType(p->shape().type)) &&
          (!last || p->parameter_number() > last->parameter_number()))
        last = p;
    return last;
  };
  const hlo::HloInstruction* last = last_input(true);
  if (!last) last = last_input(false);
  if (!last) {
    a.why_not = "no entry parameter has a batch dimension";
    return a;
  }
  const int64_t b = last->shape().dims[0];
  if (const hlo::HloInstruction* step = IndexedAlongLeading(module, last->shape())) {
    a.why_not = "the leading dimension (" + std::to_string(b) + ") of %" + last->name() +
                " is indexed by %" + step->name() +
                " at a computed position: a time or sequence axis (a scan), not a batch";
    return a;
  }
  if (b < cores || b % cores) {
    a.why_not = "the batch " + std::to_string(b) + " (leading dimension of %" + last->name() +
                ") does not split over " + std::to_string(cores) + " cores";
    return a;
  }
  a.batch = b;
  // A floating-point vector of the batch's length is more often a per-feature one (a bias, a
  // batch-norm scale over 1024 channels at batch 1024) than per-example: it stays whole.
  for (const hlo::HloInstruction* p : params)
    if (p->shape().IsArray() && p->shape().rank() >= 1 && p->shape().dims[0] == b &&
        !weights.count(p) && (p->shape().rank() >= 2 || !hlo::IsFloatingType(p->shape().type))) {
      a.inputs.push_back(p);
      carrying.insert(p);
    }
  for (const auto& owned : entry.instructions()) {
    const hlo::HloInstruction* i = owned.get();
    if (i->opcode() == hlo::Opcode::kParameter) continue;
    bool from_batch = std::any_of(i->operands().begin(), i->operands().end(),
                                  [&](const hlo::HloInstruction* o) { return carrying.count(o); });
    if (!from_batch) continue;
    // What a loop, call or conditional reduces over the batch inside is all-reduced there,
    // and batch-norm-training's statistics are the whole batch's: their results are whole.
    const hlo::HloInstruction* producer = i;
    while (producer->opcode() == hlo::Opcode::kGetTupleElement) producer = producer->operand(0);
    const bool computed_inside = producer->opcode() == hlo::Opcode::kWhile ||
                                 producer->opcode() == hlo::Opcode::kCall ||
                                 producer->opcode() == hlo::Opcode::kConditional ||
                                 producer->opcode() == hlo::Opcode::kBatchNormTraining;
    if (HasDim(i->shape(), b) || MergesBatchMajor(*i, b)) {
      carrying.insert(i);
    } else if ((i->opcode() == hlo::Opcode::kReshape || i->opcode() == hlo::Opcode::kBitcast) &&
               i->shape().IsArray()) {
      // Merged into another dimension, the batch is no longer a dimension the analysis can
      // follow.
      BatchAnalysis whole;
      whole.why_not = "%" + i->name() + " reshapes the batch dimension (" + std::to_string(b) +
                      ") of %" + i->operand(0)->name() + " into " + i->shape().ToString(false);
      return whole;
    } else if (i->opcode() != hlo::Opcode::kTuple && i->shape().IsArray() && !computed_inside) {
      if (!Combines(*i)) {
        BatchAnalysis whole;
        whole.why_not = "%" + i->name() + " (" + std::string(hlo::OpcodeName(i->opcode())) +
                        ") takes the batch dimension (" + std::to_string(b) +
                        ") away in a way the cores' parts cannot be combined by an all-reduce";
        return whole;
      }
    }
  }
  return a;
}

}  // namespace tpusim::spmd
