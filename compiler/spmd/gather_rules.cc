// Tiled strategies of gather and scatter: a dimension split alike in the operand and the
// indices that both index in step (operand_batching_dims, take_along_axis), a window
// dimension the indices do not touch (each device's rows of every slice), or the indices'
// batch alone (each device's lookups into a whole operand).
#include <algorithm>

#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::IntList;
using hlo::Opcode;
using hlo::Result;
using hlo::Shape;

namespace {

const IntList kEmpty;
const IntList& List(const HloInstruction& i, const char* key) {
  const IntList* l = i.GetIntList(key);
  return l ? *l : kEmpty;
}
bool Has(const IntList& l, int64_t d) { return std::find(l.begin(), l.end(), d) != l.end(); }
int64_t IndexOf(const IntList& l, int64_t d) {
  return std::find(l.begin(), l.end(), d) - l.begin();
}

// The result dimension of indices dimension `j` (the result's dims that are not `window`,
// in order, follow the indices' dims without index_vector_dim).
int64_t BatchPosition(int64_t j, int64_t index_vector_dim, const IntList& window, size_t rank) {
  int64_t t = j - (index_vector_dim < j ? 1 : 0);
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
    if (Has(window, d)) continue;
    if (t-- == 0) return d;
  }
  return -1;
}

// The window dimension of operand dimension `d` (operand dims that are neither collapsed nor
// batching, in order, map to `window`).
int64_t WindowPosition(int64_t d, const IntList& collapsed, const IntList& batching,
                       const IntList& window) {
  int64_t t = 0;
  for (int64_t k = 0; k < d; ++k) t += !Has(collapsed, k) && !Has(batching, k);
  return t < static_cast<int64_t>(window.size()) ? window[t] : -1;
}

}  // namespace

Result<std::optional<Local>> Partitioner::GatherRule(const HloInstruction& i) {
  const Local &op = Of(i.operand(0)), &idx = Of(i.operand(1));
  const Shape& shape = i.shape();
  const IntList &offset = List(i, "offset_dims"), &collapsed = List(i, "collapsed_slice_dims");
  const IntList &index_map = List(i, "start_index_map"), &ob = List(i, "operand_batching_dims");
  const IntList& ib = List(i, "start_indices_batching_dims");
  const int64_t ivd = i.GetInt("index_vector_dim").value_or(0);
  const int64_t od = OneTiledDim(op.sharding), id = OneTiledDim(idx.sharding);
  // The gather on each device, its result split along `dim`; the operand first laid out as
  // `operand_as` when given.
  auto out =
      [&](int64_t dim, IntList sizes,
          const std::optional<HloSharding>& operand_as = {}) -> Result<std::optional<Local>> {
    if (dim < 0) return NoRule();
    HloSharding s = Tiled1D(shape.dims.size(), dim);
    Result<Shape> ls = LocalShape(shape, s);
    if (!ls.ok()) return NoRule();
    HloInstruction* operand = op.value;
    if (operand_as) {
      Result<HloInstruction*> r = Reshard(op, i.operand(0)->shape(), *operand_as);
      if (!r.ok()) return NoRule();
      operand = r.value();
    }
    HloInstruction* g = Clone(i, ls.value(), {operand, idx.value});
    g->SetAttr("slice_sizes", sizes);
    return std::optional<Local>(Local{g, s});
  };
  IntList sizes = List(i, "slice_sizes");
  if (od >= 0 && id >= 0 && Has(ob, od) && ib.at(IndexOf(ob, od)) == id) {
    return out(BatchPosition(id, ivd, offset, shape.dims.size()), sizes);
  }
  if (od >= 0 && idx.replicated() && !Has(index_map, od) && !Has(collapsed, od) && !Has(ob, od) &&
      od < static_cast<int64_t>(sizes.size()) && sizes[od] == i.operand(0)->shape().dims[od]) {
    sizes[od] /= n_;
    return out(WindowPosition(od, collapsed, ob, offset), sizes);
  }
  if (op.replicated() && id >= 0 && id != ivd && ob.empty()) {
    return out(BatchPosition(id, ivd, offset, shape.dims.size()), sizes);
  }
  // Indices split along a batching dimension, the operand laid out otherwise (take_along_axis
  // over an LM head's logits split by vocabulary): the operand takes the indices' split along
  // the matching batching dimension (an all-to-all, or a local slice of a whole operand), as
  // XLA reshards it, and each device gathers its own rows instead of every device all of them.
  if (id >= 0 && id != ivd && Has(ib, id) && (op.replicated() || od >= 0)) {
    const size_t rank = i.operand(0)->shape().dims.size();
    return out(BatchPosition(id, ivd, offset, shape.dims.size()), sizes,
               Tiled1D(rank, ob.at(IndexOf(ib, id))));
  }
  // Lookups split by example into an operand split otherwise (FSDP's embedding table split
  // along its rows): the operand is gathered whole, as a dot's split weights are, and each
  // device looks up its own examples' rows rather than every device all of them.
  if (op.tiled() && id >= 0 && id != ivd && ob.empty()) {
    return out(BatchPosition(id, ivd, offset, shape.dims.size()), sizes, HloSharding::Replicated());
  }
  return MaskedGatherRule(i);
}

// The operand split along the one dimension the indices index, with slices of one element
// (take_along_axis over logits split by vocabulary on a mesh), and elsewhere only along
// batching dimensions the indices split alike: each device gathers from its own slice with
// the indices moved into it (those outside clamped, their results zero), and the devices
// holding the other slices of the same rows sum theirs. XLA partitions a gather whose operand
// is split only on trivially sliced dimensions so (openxla/xla
// xla/service/spmd/gather_scatter_handler.cc,
// GatherScatterOperandPartitionedOnlyOnTrivialSliceDims).
Result<std::optional<Local>> Partitioner::MaskedGatherRule(const HloInstruction& i) {
  const Local &op = Of(i.operand(0)), &idx = Of(i.operand(1));
  const Shape &shape = i.shape(), &os = i.operand(0)->shape(), &is = i.operand(1)->shape();
  const IntList &offset = List(i, "offset_dims"), &index_map = List(i, "start_index_map");
  const IntList &ob = List(i, "operand_batching_dims"),
                &ib = List(i, "start_indices_batching_dims");
  const IntList& sizes = List(i, "slice_sizes");
  const int64_t ivd = i.GetInt("index_vector_dim").value_or(0);
  const size_t orank = os.dims.size(), irank = is.dims.size();
  if (!op.tiled() || op.partial || idx.partial || !(idx.tiled() || idx.replicated()) ||
      !offset.empty() || index_map.size() != 1 || ob.size() != ib.size() ||
      is.type != hlo::PrimitiveType::kS32 || !shape.IsArray() ||
      (ivd < static_cast<int64_t>(irank) && is.dims[ivd] != 1) || sizes.size() != orank)
    return NoRule();
  const int64_t c = index_map[0];
  const int64_t parts = op.sharding.ShardsAlong(c);
  if (parts < 2 || sizes[c] != 1) return NoRule();
  for (size_t d = 0; d < orank; ++d)
    if (static_cast<int64_t>(d) != c && !Has(ob, d) && op.sharding.ShardsAlong(d) > 1)
      return NoRule();
  for (size_t k = 0; k < ob.size(); ++k)
    if (op.sharding.ShardsAlong(ob[k]) != idx.sharding.ShardsAlong(ib[k])) return NoRule();
  // The result's tiles follow the indices' (their dims but the index vector's, in order).
  std::vector<int64_t> shards;
  for (size_t j = 0; j < irank; ++j) {
    if (static_cast<int64_t>(j) == ivd) continue;
    if (!Has(ib, j) && idx.sharding.ShardsAlong(j) > 1) return NoRule();
    shards.push_back(idx.sharding.ShardsAlong(j));
  }
  std::vector<std::vector<int64_t>> tile(n_);
  std::vector<int64_t> part(n_, 0);
  for (int64_t d = 0; d < n_; ++d) {
    const std::vector<int64_t> ot = op.sharding.TileIndexOf(d),
                               it = idx.tiled() ? idx.sharding.TileIndexOf(d)
                                                : std::vector<int64_t>(irank, 0);
    if (ot.size() != orank || it.size() != irank) return NoRule();
    for (size_t k = 0; k < ob.size(); ++k)
      if (ot[ob[k]] != it[ib[k]]) return NoRule();  // each device's rows of both
    for (size_t j = 0; j < irank; ++j)
      if (static_cast<int64_t>(j) != ivd) tile[d].push_back(it[j]);
    part[d] = ot[c];
  }
  const int64_t extent = os.dims[c] / parts;
  const Shape& li = idx.value->shape();
  const Shape s32 = Shape::Array(hlo::PrimitiveType::kS32, li.dims);
  auto fill = [&](HloInstruction* scalar, const Shape& to) {
    HloInstruction* b = Add(i.name() + ".fill", Opcode::kBroadcast, to, {scalar});
    b->SetAttr("dimensions", IntList{});
    return b;
  };
  // (the gather clamps a start index into the operand: so does each device, first)
  HloInstruction* low = fill(S32Constant(0), s32);
  HloInstruction* start = Add(i.name() + ".index", Opcode::kMaximum, s32,
                              {Add(i.name() + ".index", Opcode::kMinimum, s32,
                                   {idx.value, fill(S32Constant(os.dims[c] - 1), s32)}),
                               low});
  HloInstruction* moved = Add(i.name() + ".local-index", Opcode::kSubtract, s32,
                              {start, fill(TileOffset(op.sharding, c, extent), s32)});
  HloInstruction* high = fill(S32Constant(extent - 1), s32);
  HloInstruction* clamped =
      Add(i.name() + ".local-index", Opcode::kMaximum, s32,
          {Add(i.name() + ".local-index", Opcode::kMinimum, s32, {moved, high}), low});
  // Whether each result's index lies in this device's slice, decided in the result's shape
  // (so the predicate fuses with the select and is never stored).
  auto masked = [&](HloInstruction* g) {
    const Shape& gs = g->shape();
    const Shape index = Shape::Array(hlo::PrimitiveType::kS32, gs.dims);
    HloInstruction* at = Add(i.name() + ".local-index", Opcode::kReshape, index, {moved});
    auto compare = [&](int64_t bound, const char* dir) {
      HloInstruction* r = Add(i.name() + ".in-slice", Opcode::kCompare,
                              Shape::Array(hlo::PrimitiveType::kPred, gs.dims),
                              {at, fill(S32Constant(bound), index)});
      r->SetAttr("direction", hlo::Word{dir});
      return r;
    };
    HloInstruction* inside =
        Add(i.name() + ".in-slice", Opcode::kAnd, Shape::Array(hlo::PrimitiveType::kPred, gs.dims),
            {compare(0, "GE"), compare(extent - 1, "LE")});
    HloInstruction* zero =
        Add(i.name() + ".zero", Opcode::kConstant, Shape::Array(gs.type, {}), {});
    zero->mutable_literal().floats = {0.0};
    return Add(i.name() + ".masked", Opcode::kSelect, gs, {inside, g, fill(zero, gs)});
  };
  return FromDeviceTiles(i, shards, tile, part, parts, {op.value, clamped},
                         AddComputation(shape.type), masked);
}

Result<std::optional<Local>> Partitioner::ScatterRule(const HloInstruction& i) {
  if (i.operand_count() != 3 || i.shape().IsTuple()) return NoRule();
  const Local &op = Of(i.operand(0)), &idx = Of(i.operand(1)), &upd = Of(i.operand(2));
  const IntList &window = List(i, "update_window_dims"),
                &inserted = List(i, "inserted_window_dims");
  const IntList& to_operand = List(i, "scatter_dims_to_operand_dims");
  const IntList &ob = List(i, "input_batching_dims"),
                &ib = List(i, "scatter_indices_batching_dims");
  const int64_t ivd = i.GetInt("index_vector_dim").value_or(0);
  const int64_t id = OneTiledDim(idx.sharding), ud = OneTiledDim(upd.sharding);
  const size_t rank = i.shape().dims.size(), urank = i.operand(2)->shape().dims.size();
  int64_t od = -1;  // the operand dimension the updates' split lands on
  HloInstruction* updates = upd.value;
  const int64_t upos = id >= 0 ? BatchPosition(id, ivd, window, urank) : -1;
  if (id >= 0 && upos >= 0 && (ud == upos || upd.replicated()) && Has(ib, id)) {
    od = ob.at(IndexOf(ib, id));
    if (upd.replicated()) {  // each device's updates: its slice of the whole ones
      Result<HloInstruction*> r = Reshard(upd, i.operand(2)->shape(), Tiled1D(urank, upos));
      if (!r.ok()) return NoRule();
      updates = r.value();
    }
  } else if (idx.replicated() && ud >= 0 && Has(window, ud)) {
    for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
      if (!Has(to_operand, d) && !Has(ob, d) && WindowPosition(d, inserted, ob, window) == ud &&
          i.operand(2)->shape().dims[ud] == i.shape().dims[d]) {
        od = d;
      }
    }
  }
  if (od < 0 && op.replicated() && id >= 0 && upos >= 0 && ud == upos && !Has(ib, id) &&
      i.to_apply() && i.to_apply()->root()->opcode() == Opcode::kAdd) {
    return ScatterAddOfShares(i, idx.value, updates);
  }
  if (od < 0 || !(op.replicated() || OneTiledDim(op.sharding) == od)) return NoRule();
  HloSharding s = Tiled1D(rank, od);
  Result<HloInstruction*> operand = Reshard(op, i.operand(0)->shape(), s);
  Result<Shape> ls = LocalShape(i.shape(), s);
  if (!operand.ok() || !ls.ok()) return NoRule();
  return std::optional<Local>(
      Local{Clone(i, ls.value(), {operand.value(), idx.value, updates}), s});
}

// A scatter-add of updates split with their indices along the scatter's batch (an embedding
// gradient): each device adds its updates into zeros, an all-reduce sums the devices' parts,
// and the operand (unless it is zeros) is added once.
Result<std::optional<Local>> Partitioner::ScatterAddOfShares(const HloInstruction& i,
                                                             HloInstruction* indices,
                                                             HloInstruction* updates) {
  const HloInstruction* operand = i.operand(0);
  const bool zeros = operand->opcode() == Opcode::kBroadcast &&
                     operand->operand(0)->opcode() == Opcode::kConstant &&
                     operand->operand(0)->literal().floats == std::vector<double>{0.0} &&
                     operand->operand(0)->literal().ints.empty();
  if (pure_ && !zeros) return NoRule();
  const Shape scalar = Shape::Array(i.shape().type, {});
  HloInstruction* zero = Add(i.name() + ".zero", Opcode::kConstant, scalar, {});
  zero->mutable_literal().floats = {0.0};
  HloInstruction* init = Add(i.name() + ".zeros", Opcode::kBroadcast, i.shape(), {zero});
  init->SetAttr("dimensions", hlo::IntList{});
  Local total = Combined(Clone(i, i.shape(), {init, indices, updates}), i.to_apply());
  if (zeros) return std::optional<Local>(total);
  HloInstruction* sum =
      Add(i.name() + ".plus-operand", Opcode::kAdd, i.shape(), {Of(operand).value, total.value});
  return std::optional<Local>(Local{sum, HloSharding::Replicated()});
}

}  // namespace tpusim::spmd
