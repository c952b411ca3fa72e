// Tiled strategies per op: the per-device op on per-device operands when the global op's
// result is the tiles' results put together (or, for contractions over a tiled dimension,
// their sum). Anything else returns nullopt and runs replicated.
#include <algorithm>

#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Opcode;
using hlo::Result;
using hlo::Shape;
using hlo::Status;

namespace {

// Position of `dim` among the dimensions of `rank` not in `a` nor `b` (a dot's free dims).
int64_t FreeIndex(int64_t dim, size_t rank, const hlo::IntList* a, const hlo::IntList* b) {
  int64_t k = 0;
  for (int64_t d = 0; d < dim && d < static_cast<int64_t>(rank); ++d) {
    if (!Contains(a, d) && !Contains(b, d)) ++k;
  }
  return k;
}

}  // namespace

Rule Partitioner::TiledRule(const HloInstruction& i) {
  std::vector<const Local*> ops;
  bool any_tiled = false;
  for (const HloInstruction* o : i.operands()) {
    ops.push_back(&Of(o));
    any_tiled |= !ops.back()->replicated();
  }
  if (!any_tiled) return NoRule();
  const Shape& shape = i.shape();
  auto local = [&](const HloSharding& s, std::vector<HloInstruction*> operands) -> Rule {
    Result<Shape> ls = LocalShape(shape, s);
    if (!ls.ok()) return NoRule();  // e.g. unequal tiles: replicated instead
    return std::optional<Local>(Local{Clone(i, ls.value(), operands), s});
  };

  if (i.opcode() == Opcode::kGetTupleElement) {
    const Local& t = *ops[0];
    if (t.sharding.kind != HloSharding::Kind::kTuple) return NoRule();
    int64_t k = i.GetInt("index").value_or(0);
    const HloSharding& e = t.sharding.elements.at(k);
    return std::optional<Local>(Local{Clone(i, t.value->shape().tuple_shapes.at(k), {t.value}), e});
  }
  if (i.opcode() == Opcode::kTuple) {
    HloSharding s;
    s.kind = HloSharding::Kind::kTuple;
    std::vector<HloInstruction*> vals;
    std::vector<Shape> shapes;
    for (const Local* o : ops) {
      if (o->manual()) return NoRule();
      s.elements.push_back(o->sharding);
      vals.push_back(o->value);
      shapes.push_back(o->value->shape());
    }
    return std::optional<Local>(Local{Clone(i, Shape::Tuple(shapes), vals), s});
  }
  if (IsElementwiseOp(i) && shape.IsArray()) {
    // The operands meet in the layout of the one split into the most tiles (the first such):
    // the others are sliced to it where they hold more, as XLA's propagation prefers the
    // more partitioned sharding, rather than it gathered (softmax's row sums, split by batch
    // only, beside logits split by batch and vocabulary).
    auto tiles = [&](const HloSharding& s) {
      int64_t t = 1;
      for (size_t d = 0; d < shape.dims.size(); ++d) t *= s.ShardsAlong(d);
      return t;
    };
    const HloSharding* target = nullptr;
    for (const Local* o : ops) {
      if (o->tiled() && (!target || tiles(o->sharding) > tiles(*target))) target = &o->sharding;
    }
    if (!target) return NoRule();
    std::vector<HloInstruction*> vals;
    for (size_t k = 0; k < ops.size(); ++k) {
      const Shape& os = i.operand(k)->shape();
      if (os.dims.empty() && ops[k]->replicated()) {  // a scalar operand (clamp's bounds)
        vals.push_back(ops[k]->value);
        continue;
      }
      if (os.dims != shape.dims) return NoRule();
      Result<HloInstruction*> r = Reshard(*ops[k], os, *target);
      if (!r.ok()) return r.status();
      vals.push_back(r.value());
    }
    return local(*target, vals);
  }
  const int64_t d0 = ops.empty() ? -1 : OneTiledDim(ops[0]->sharding);
  switch (i.opcode()) {
    case Opcode::kBroadcast: {  // the operand's tiled dimension lands where `dimensions` says
      const hlo::IntList* dims = i.dimensions();
      if (d0 < 0) return MeshMoveRule(i);
      if (!dims) return NoRule();
      return local(Tiled1D(shape.dims.size(), (*dims)[d0]), {ops[0]->value});
    }
    case Opcode::kTranspose: {
      const hlo::IntList* perm = i.dimensions();
      if (d0 < 0) return MeshMoveRule(i);
      if (!perm) return NoRule();
      int64_t out = std::find(perm->begin(), perm->end(), d0) - perm->begin();
      return local(Tiled1D(shape.dims.size(), out), {ops[0]->value});
    }
    case Opcode::kReshape: {
      // The tiles stay contiguous when the dimensions before the tiled one hold as many
      // elements as some leading dimensions of the result, and the result's next dimension
      // splits as evenly (the tiled dimension merged as the major part, or split into a major
      // part that still divides).
      const Shape& in = i.operand(0)->shape();
      if (d0 < 0) return MeshReshapeRule(i);
      if (!shape.IsArray()) return NoRule();
      int64_t before = 1, after = 1;
      for (int64_t d = 0; d < d0; ++d) before *= in.dims[d];
      size_t e = 0;
      while (e < shape.dims.size() && after < before) after *= shape.dims[e++];
      while (e < shape.dims.size() && shape.dims[e] == 1 && in.dims[d0] != 1) ++e;
      if (after != before || e >= shape.dims.size() || shape.dims[e] % n_ != 0) return NoRule();
      return local(Tiled1D(shape.dims.size(), e), {ops[0]->value});
    }
    case Opcode::kReduce: {
      if (d0 < 0) return MeshReduceRule(i);
      if (i.operand_count() != 2 || !ops[1]->replicated()) return NoRule();
      const hlo::IntList* dims = i.dimensions();
      if (!dims) return NoRule();
      if (Contains(dims, d0)) {  // each device's partial result, combined by the reducer
        HloInstruction* partial = Clone(i, shape, {ops[0]->value, ops[1]->value});
        return std::optional<Local>(Combined(partial, i.to_apply()));
      }
      int64_t out =
          d0 - std::count_if(dims->begin(), dims->end(), [&](int64_t d) { return d < d0; });
      return local(Tiled1D(shape.dims.size(), out), {ops[0]->value, ops[1]->value});
    }
    case Opcode::kDot:
      return DotRule(i);
    case Opcode::kConvolution:
      return ConvolutionRule(i);
    case Opcode::kGather:
      return GatherRule(i);
    case Opcode::kScatter:
      return ScatterRule(i);
    case Opcode::kSlice:
    case Opcode::kPad:
    case Opcode::kConcatenate:
    case Opcode::kReverse:
    case Opcode::kSort:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
      return LayoutRule(i);
    case Opcode::kReduceWindow:
    case Opcode::kSelectAndScatter:
      return WindowRule(i);
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      return BatchNormRule(i);
    case Opcode::kFusion:
      return FusionRule(i);
    case Opcode::kWhile:
      return WhileRule(i);
    default:
      return NoRule();
  }
}

Result<std::optional<Local>> Partitioner::DotRule(const HloInstruction& i) {
  const Local &lhs = Of(i.operand(0)), &rhs = Of(i.operand(1));
  const hlo::IntList *lb = i.GetIntList("lhs_batch_dims"),
                     *lc = i.GetIntList("lhs_contracting_dims");
  const hlo::IntList *rb = i.GetIntList("rhs_batch_dims"),
                     *rc = i.GetIntList("rhs_contracting_dims");
  const size_t lrank = i.operand(0)->shape().dims.size();
  const size_t rrank = i.operand(1)->shape().dims.size();
  const size_t batch = lb ? lb->size() : 0;
  const int64_t ld = OneTiledDim(lhs.sharding), rd = OneTiledDim(rhs.sharding);
  auto out = [&](const HloSharding& s) -> Result<std::optional<Local>> {
    Result<Shape> ls = LocalShape(i.shape(), s);
    if (!ls.ok()) return NoRule();
    return std::optional<Local>(Local{Clone(i, ls.value(), {lhs.value, rhs.value}), s});
  };
  const size_t rank = i.shape().dims.size();
  // The other operand whole: gathered first when it is sharded (FSDP's weights).
  auto whole = [&](const Local& o, const hlo::HloInstruction* global) -> Result<HloInstruction*> {
    return Reshard(o, global->shape(), HloSharding::Replicated());
  };
  // Both split along free dimensions (FSDP's weights beside batch-split activations): the
  // smaller operand is gathered and the larger keeps its split, as XLA's partitioner does (a
  // layer gathers its weights; the LM head, whose weights outweigh the activations, gathers
  // those and splits the vocabulary).
  const bool lfree = ld >= 0 && !Contains(lb, ld) && !Contains(lc, ld);
  const bool rfree = rd >= 0 && !Contains(rb, rd) && !Contains(rc, rd);
  auto bits = [&](size_t k) {
    const Shape& s = i.operand(k)->shape();
    return static_cast<double>(s.ElementCount()) * hlo::PrimitiveTypeBits(s.type);
  };
  const bool keep_rhs = lfree && rfree && bits(1) > bits(0);
  if (lfree && (!rfree || !keep_rhs)) {
    Result<HloInstruction*> w = whole(rhs, i.operand(1));  // rows split
    if (!w.ok()) return w.status();
    HloSharding s = Tiled1D(rank, batch + FreeIndex(ld, lrank, lb, lc));
    Result<Shape> ls = LocalShape(i.shape(), s);
    if (!ls.ok()) return NoRule();
    return std::optional<Local>(Local{Clone(i, ls.value(), {lhs.value, w.value()}), s});
  }
  if (rfree && (ld < 0 || keep_rhs)) {  // columns split
    Result<HloInstruction*> x = whole(lhs, i.operand(0));
    if (!x.ok()) return x.status();
    size_t lhs_free = lrank - batch - (lc ? lc->size() : 0);
    HloSharding s = Tiled1D(rank, batch + lhs_free + FreeIndex(rd, rrank, rb, rc));
    Result<Shape> ls = LocalShape(i.shape(), s);
    if (!ls.ok()) return NoRule();
    return std::optional<Local>(Local{Clone(i, ls.value(), {x.value(), rhs.value}), s});
  }
  if (ld >= 0 && rd >= 0) {
    for (size_t k = 0; lc && rc && k < lc->size(); ++k) {  // contracting dims split alike
      if ((*lc)[k] == ld && (*rc)[k] == rd) {
        HloInstruction* partial = Clone(i, i.shape(), {lhs.value, rhs.value});
        return std::optional<Local>(Combined(partial, AddComputation(i.shape().type)));
      }
    }
    for (size_t k = 0; k < batch; ++k) {  // batch dims split alike
      if ((*lb)[k] == ld && (*rb)[k] == rd) return out(Tiled1D(rank, k));
    }
  }
  return MeshDotRule(i);
}

// Batch split with whole weights: each device convolves its examples (in feature groups or
// not). A weight gradient (both operands split along the dimension the convolution
// contracts): partial sums.
Result<std::optional<Local>> Partitioner::ConvolutionRule(const HloInstruction& i) {
  const Local &lhs = Of(i.operand(0)), &rhs = Of(i.operand(1));
  const hlo::ConvDims* cd = i.conv_dims();
  if (!cd || i.GetInt("batch_group_count").value_or(1) != 1) return NoRule();
  const bool grouped = i.GetInt("feature_group_count").value_or(1) != 1;
  const int64_t ld = OneTiledDim(lhs.sharding), rd = OneTiledDim(rhs.sharding);
  if (ld == cd->input_batch && rhs.replicated()) {  // feature groups split no example
    HloSharding s = Tiled1D(i.shape().dims.size(), cd->output_batch);
    Result<Shape> ls = LocalShape(i.shape(), s);
    if (!ls.ok()) return NoRule();
    return std::optional<Local>(Local{Clone(i, ls.value(), {lhs.value, rhs.value}), s});
  }
  if (!grouped && ld == cd->input_feature && rd == cd->kernel_input_feature) {
    HloInstruction* partial = Clone(i, i.shape(), {lhs.value, rhs.value});
    return std::optional<Local>(Combined(partial, AddComputation(i.shape().type)));
  }
  return MeshConvRule(i);
}

}  // namespace tpusim::spmd
