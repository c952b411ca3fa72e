// Moving a value between layouts: a tiled value becomes whole by all-gathers (one per split
// dimension, each over the devices that differ only along it); a whole value becomes tiled
// by each device's dynamic-slice at offsets looked up by partition-id.
#include <algorithm>
#include <bit>
#include <map>
#include <numeric>

#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Opcode;
using hlo::Result;
using hlo::Shape;
using hlo::Status;

Result<Shape> Partitioner::LocalShape(const Shape& global, const HloSharding& s) const {
  if (s.kind == HloSharding::Kind::kTuple) {
    if (!global.IsTuple() || global.tuple_shapes.size() != s.elements.size()) {
      return Status::Error("tuple sharding " + s.ToString() + " does not match shape " +
                           global.ToString(false));
    }
    std::vector<Shape> parts;
    for (size_t k = 0; k < s.elements.size(); ++k) {
      Result<Shape> p = LocalShape(global.tuple_shapes[k], s.elements[k]);
      if (!p.ok()) return p;
      parts.push_back(p.value());
    }
    Shape t = Shape::Tuple(std::move(parts));
    return t;
  }
  if (s.kind != HloSharding::Kind::kTiled) {
    if (global.IsTuple() && s.kind == HloSharding::Kind::kReplicated) return global;
    if (s.kind == HloSharding::Kind::kMaximal) {
      return Status::Error("maximal sharding " + s.ToString() +
                           " (one device holds the value) is not supported");
    }
    return global;
  }
  if (!global.IsArray()) return Status::Error("a tiled sharding on a tuple shape");
  size_t rank = s.tile_dims.size() - (s.last_tile_dim_replicate ? 1 : 0);
  int64_t tiles = 1;
  for (int64_t t : s.tile_dims) tiles *= t;
  if (rank != global.dims.size() || tiles != n_ || static_cast<int64_t>(s.devices.size()) != n_) {
    return Status::Error("sharding " + s.ToString() + " does not fit " + global.ToString(false) +
                         " on " + std::to_string(n_) + " devices");
  }
  Shape local = global;
  for (size_t d = 0; d < rank; ++d) {
    if (global.dims[d] % s.tile_dims[d] != 0) {
      return Status::Error("sharding " + s.ToString() + " splits dimension " + std::to_string(d) +
                           " of " + global.ToString(false) + " into " +
                           std::to_string(s.tile_dims[d]) +
                           " unequal parts (XLA pads them; tpusim needs equal tiles)");
    }
    local.dims[d] /= s.tile_dims[d];
  }
  return local;
}

HloSharding Partitioner::Tiled1D(size_t rank, size_t dim) const {
  HloSharding s;
  s.kind = HloSharding::Kind::kTiled;
  s.tile_dims.assign(rank, 1);
  s.tile_dims[dim] = n_;
  s.devices.resize(n_);
  std::iota(s.devices.begin(), s.devices.end(), 0);
  return s;
}

int64_t Partitioner::OneTiledDim(const HloSharding& s) const {
  if (s.kind != HloSharding::Kind::kTiled || s.last_tile_dim_replicate) return -1;
  for (size_t d = 0; d < s.tile_dims.size(); ++d) {
    if (s.tile_dims[d] == n_ && s == Tiled1D(s.tile_dims.size(), d)) return d;
  }
  return -1;
}

Result<HloInstruction*> Partitioner::AllGather(HloInstruction* v, const Shape& global,
                                               const HloSharding& from) {
  impure_ |= pure_;
  size_t rank = global.dims.size();
  std::vector<int64_t> tiles(from.tile_dims.begin(), from.tile_dims.begin() + rank);
  for (size_t d = 0; d < rank; ++d) {
    if (tiles[d] == 1) continue;
    // Devices that differ only in their tile along d, each group in tile order along d.
    std::map<std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>> groups;
    for (size_t k = 0; k < from.devices.size(); ++k) {
      std::vector<int64_t> idx(from.tile_dims.size());
      int64_t linear = static_cast<int64_t>(k);
      for (size_t j = from.tile_dims.size(); j-- > 0;) {
        idx[j] = linear % from.tile_dims[j];
        linear /= from.tile_dims[j];
      }
      int64_t along = idx[d];
      idx[d] = 0;
      groups[idx].push_back({along, from.devices[k]});
    }
    hlo::ReplicaGroups rg;
    for (auto& [key, members] : groups) {
      std::sort(members.begin(), members.end());
      std::vector<int64_t> g;
      for (auto& [along, dev] : members) g.push_back(dev);
      rg.groups.push_back(std::move(g));
    }
    Shape out = v->shape();
    out.dims[d] = global.dims[d];
    HloInstruction* ag = Add(v->name() + ".all-gather", Opcode::kAllGather, out, {v});
    MarkCollective(*ag, std::move(rg), static_cast<int64_t>(d));
    v = ag;
  }
  return v;
}

HloInstruction* Partitioner::S32Constant(int64_t v) {
  HloInstruction* c = Add("c", Opcode::kConstant, Shape::Array(hlo::PrimitiveType::kS32, {}), {});
  c->mutable_literal().ints = {v};
  return c;
}

HloInstruction* Partitioner::Digit(HloInstruction* p, int64_t step, int64_t count) {
  const Shape s32 = Shape::Array(hlo::PrimitiveType::kS32, {});
  auto power_of_two = [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
  if (power_of_two(step) && power_of_two(count)) {  // p >= 0: a shift and a mask
    HloInstruction* idx = p;
    if (step > 1)
      idx = Add(
          "tile", Opcode::kShiftRightLogical, s32,
          {idx, S32Constant(static_cast<int64_t>(std::countr_zero(static_cast<uint64_t>(step))))});
    return Add("tile", Opcode::kAnd, s32, {idx, S32Constant(count - 1)});
  }
  HloInstruction* idx = p;
  if (step > 1) idx = Add("tile", Opcode::kDivide, s32, {idx, S32Constant(step)});
  return Add("tile", Opcode::kRemainder, s32, {idx, S32Constant(count)});
}

HloInstruction* Partitioner::BitWeightedOffset(const HloSharding& to, size_t d, int64_t extent,
                                               HloInstruction* partition) {
  if (n_ < 2 || (n_ & (n_ - 1)) != 0) return nullptr;
  auto index = [&](int64_t p) {
    const std::vector<int64_t> idx = to.TileIndexOf(p);
    return idx.empty() ? int64_t{-1} : idx[d];
  };
  if (index(0) != 0) return nullptr;
  std::vector<int64_t> weight;
  for (int64_t bit = 1; bit < n_; bit <<= 1) weight.push_back(index(bit));
  for (int64_t p = 0; p < n_; ++p) {
    int64_t sum = 0;
    for (size_t b = 0; b < weight.size(); ++b) sum += ((p >> b) & 1) * weight[b];
    if (weight.empty() || sum != index(p) || index(p) < 0) return nullptr;
  }
  const Shape s32 = Shape::Array(hlo::PrimitiveType::kS32, {});
  HloInstruction* offset = nullptr;
  for (size_t b = 0; b < weight.size(); ++b) {
    if (weight[b] == 0) continue;
    HloInstruction* bit = Digit(partition, int64_t{1} << b, 2);
    HloInstruction* term =
        Add("offset", Opcode::kMultiply, s32, {bit, S32Constant(weight[b] * extent)});
    offset = offset ? Add("offset", Opcode::kAdd, s32, {offset, term}) : term;
  }
  return offset;
}

HloInstruction* Partitioner::PartitionIndex() {
  impure_ |= pure_;  // partition-id has no place in a fusion
  HloInstruction*& partition_id_ = partition_ids_[comp_];
  if (!partition_id_) {
    HloInstruction* pid =
        Add("partition-id", Opcode::kPartitionId, Shape::Array(hlo::PrimitiveType::kU32, {}), {});
    partition_id_ =
        Add("partition-index", Opcode::kConvert, Shape::Array(hlo::PrimitiveType::kS32, {}), {pid});
  }
  return partition_id_;
}

HloInstruction* Partitioner::TileOffset(const HloSharding& to, size_t d, int64_t extent) {
  HloInstruction* partition_id_ = PartitionIndex();
  const Shape s32 = Shape::Array(hlo::PrimitiveType::kS32, {});
  std::vector<int64_t> iota(n_);
  std::iota(iota.begin(), iota.end(), 0);
  int64_t stride = 1;  // devices per step of the tile index along d (row-major tiles)
  std::vector<int64_t> strides(to.tile_dims.size());
  for (size_t k = to.tile_dims.size(); k-- > 0;) strides[k] = stride, stride *= to.tile_dims[k];
  // The tile index along d as ((p / step) % tiles) for device p: the step is the stride of
  // d's tiles when the devices are in order, another where a mesh lists them transposed
  // (`<=[2,4]T(1,0)`: d's tiles follow p % 4, or p / 4); on the scalar path.
  const int64_t tiles = to.tile_dims[d];
  int64_t step = to.devices == iota ? strides[d] : 0;
  for (int64_t st = 1; step == 0 && st < n_; ++st) {
    bool fits = true;
    for (int64_t p = 0; p < n_ && fits; ++p) {
      const std::vector<int64_t> idx = to.TileIndexOf(p);
      fits = !idx.empty() && idx[d] == (p / st) % tiles;
    }
    if (fits) step = st;
  }
  if (step > 0) {
    HloInstruction* idx = Digit(partition_id_, step, tiles);
    return Add("offset", Opcode::kMultiply, s32, {idx, S32Constant(extent)});
  }
  // Over a power-of-two count of devices, an order that mixes the mesh's axes (a tiling made
  // of the tiles devices already hold) still gives each bit of p a weight in the tile index:
  // the sum of ((p / 2^b) % 2) x weight x tile extent.
  if (HloInstruction* offset = BitWeightedOffset(to, d, extent, partition_id_)) return offset;
  // Any other device order: the offset of each device, from a table.
  std::vector<int64_t> table(n_, 0);
  for (int64_t p = 0; p < n_; ++p) {
    std::vector<int64_t> idx = to.TileIndexOf(p);
    table[p] = idx.empty() ? 0 : idx[d] * extent;
  }
  HloInstruction* t =
      Add("offsets", Opcode::kConstant, Shape::Array(hlo::PrimitiveType::kS32, {n_}), {});
  t->mutable_literal().ints = table;
  HloInstruction* one = Add("offset", Opcode::kDynamicSlice,
                            Shape::Array(hlo::PrimitiveType::kS32, {1}), {t, partition_id_});
  one->SetAttr("dynamic_slice_sizes", hlo::IntList{1});
  return Add("offset", Opcode::kReshape, s32, {one});
}

Result<HloInstruction*> Partitioner::DynamicSliceOf(HloInstruction* v, const Shape& global,
                                                    const HloSharding& to) {
  Result<Shape> local = LocalShape(global, to);
  if (!local.ok()) return local.status();
  std::vector<HloInstruction*> ops{v};
  for (size_t d = 0; d < global.dims.size(); ++d)
    ops.push_back(to.tile_dims[d] == 1 ? S32Constant(0) : TileOffset(to, d, local->dims[d]));
  HloInstruction* ds = Add(v->name() + ".shard", Opcode::kDynamicSlice, local.value(), ops);
  ds->SetAttr("dynamic_slice_sizes", hlo::IntList(local->dims.begin(), local->dims.end()));
  return ds;
}

// Tiled along `a` to tiled along `b`, as XLA's partitioner does it: each device's tile,
// its dimension b cut into one chunk per device and the chunk index moved to the front, goes
// through one all-to-all along that leading dimension (chunk j to device j, contiguous); the
// chunks received, one per source device in device order, become the major part of a.
// No device holds the whole value.
Result<HloInstruction*> Partitioner::AllToAll(HloInstruction* v, const Shape& global, int64_t a,
                                              int64_t b) {
  impure_ |= pure_;
  const Shape& local = v->shape();
  const int64_t rank = static_cast<int64_t>(local.dims.size());
  Shape cut = local;  // dimension b as [n, dims[b] / n]
  cut.dims[b] = global.dims[b] / n_;
  cut.dims.insert(cut.dims.begin() + b, n_);
  HloInstruction* chunks = Add(v->name() + ".chunks", Opcode::kReshape, cut, {v});
  // The chunk index first: [n, the tile's dimensions with b cut to dims[b] / n].
  hlo::IntList front = {b};
  Shape lead = cut;
  lead.dims = {n_};
  for (int64_t d = 0; d <= rank; ++d) {
    if (d == b) continue;
    front.push_back(d);
    lead.dims.push_back(cut.dims[d]);
  }
  HloInstruction* leading = chunks;
  if (b != 0) {
    leading = Add(v->name() + ".chunks-first", Opcode::kTranspose, lead, {chunks});
    leading->SetAttr("dimensions", front);
  }
  HloInstruction* swapped = Add(v->name() + ".all-to-all", Opcode::kAllToAll, lead, {leading});
  MarkCollective(*swapped, AllDevices(), 0);
  // The source device (leading) goes just before a, as its major part.
  HloInstruction* stacked = swapped;
  if (a != 0) {
    hlo::IntList perm;
    Shape moved = lead;
    moved.dims.clear();
    for (int64_t d = 1; d <= rank; ++d) {
      if (d == a + 1) perm.push_back(0), moved.dims.push_back(n_);
      perm.push_back(d);
      moved.dims.push_back(lead.dims[d]);
    }
    stacked = Add(v->name() + ".stacked", Opcode::kTranspose, moved, {swapped});
    stacked->SetAttr("dimensions", perm);
  }
  Shape out = local;
  out.dims[a] = global.dims[a];
  out.dims[b] = global.dims[b] / n_;
  return Add(v->name() + ".resharded", Opcode::kReshape, out, {stacked});
}

std::optional<HloSharding> Partitioner::Refinement(const HloSharding& from, const HloSharding& to,
                                                   size_t rank) const {
  std::vector<int64_t> ratio(rank);
  for (size_t k = 0; k < rank; ++k) {
    if (to.ShardsAlong(k) % from.ShardsAlong(k) != 0) return std::nullopt;
    ratio[k] = to.ShardsAlong(k) / from.ShardsAlong(k);
  }
  std::vector<std::vector<int64_t>> within(n_);
  for (int64_t d = 0; d < n_; ++d) {
    const std::vector<int64_t> f = from.TileIndexOf(d), t = to.TileIndexOf(d);
    if (f.size() != rank || t.size() != rank) return std::nullopt;
    for (size_t k = 0; k < rank; ++k) {
      if (t[k] / ratio[k] != f[k]) return std::nullopt;
      within[d].push_back(t[k] % ratio[k]);
    }
  }
  return ShardingOfTiles(ratio, within);
}

HloInstruction* Partitioner::RebroadcastForTile(const Local& v, const Shape& global, int64_t split,
                                                const HloSharding& to) {
  const HloInstruction* bc = v.value;
  if (bc->opcode() != Opcode::kBroadcast || !bc->dimensions()) return nullptr;
  const hlo::IntList& dims = *bc->dimensions();  // operand dimension k is result dims[k]
  auto mapped = [&](size_t d) {
    return std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
  };
  for (size_t d = 0; d < global.dims.size(); ++d)
    if (to.ShardsAlong(d) > 1 && mapped(d)) return nullptr;
  const auto k = std::find(dims.begin(), dims.end(), split);
  if (k == dims.end()) return nullptr;
  const size_t kd = static_cast<size_t>(k - dims.begin());
  Shape operand = bc->operand(0)->shape();  // this device's tile of it: a tile along kd
  if (operand.dims.size() != dims.size() ||
      operand.dims[kd] * n_ != global.dims[static_cast<size_t>(split)])
    return nullptr;
  for (size_t j = 0; j < dims.size(); ++j)  // the whole operand
    operand.dims[j] = global.dims[static_cast<size_t>(dims[j])];
  Result<Shape> tile = LocalShape(global, to);
  // (one element type on both sides) a larger operand: the all-to-all of the tile moves less
  if (!tile.ok() || operand.ElementCount() > tile.value().ElementCount()) return nullptr;
  Result<HloInstruction*> whole = AllGather(bc->operand(0), operand, Tiled1D(dims.size(), kd));
  if (!whole.ok()) return nullptr;
  HloInstruction* r = Add(bc->name() + ".shard", Opcode::kBroadcast, tile.value(), {whole.value()});
  r->SetAttr("dimensions", dims);
  return r;
}

Result<HloInstruction*> Partitioner::Reshard(const Local& v, const Shape& global,
                                             const HloSharding& to) {
  if (v.sharding == to) return v.value;
  // Inside a fusion's body (pure_) a collective must mark the attempt impure: no reuse there.
  if (pure_) return ReshardOnce(v, global, to);
  const auto key = std::make_pair(static_cast<const HloInstruction*>(v.value),
                                  v.sharding.ToString() + " -> " + to.ToString());
  if (auto it = reshards_.find(key); it != reshards_.end()) return it->second;
  Result<HloInstruction*> r = ReshardOnce(v, global, to);
  if (r.ok()) reshards_[key] = r.value();
  return r;
}

Result<HloInstruction*> Partitioner::ReshardOnce(const Local& v, const Shape& global,
                                                 const HloSharding& to) {
  const HloSharding& from = v.sharding;  // differs from `to` (Reshard)
  if (from.kind == HloSharding::Kind::kManual || to.kind == HloSharding::Kind::kManual) {
    return Status::Error("%" + v.value->name() + ": no resharding between " + from.ToString() +
                         " and " + to.ToString() + " outside a shard_map body");
  }
  if (global.IsTuple()) {
    std::vector<HloInstruction*> parts;
    std::vector<Shape> shapes;
    for (size_t k = 0; k < global.tuple_shapes.size(); ++k) {
      auto element = [&](const HloSharding& s) {
        return s.kind == HloSharding::Kind::kTuple ? s.elements.at(k) : s;
      };
      HloInstruction* gte = Add(v.value->name() + ".element", Opcode::kGetTupleElement,
                                v.value->shape().tuple_shapes.at(k), {v.value});
      gte->SetAttr("index", static_cast<int64_t>(k));
      Result<HloInstruction*> r =
          Reshard(Local{gte, element(from)}, global.tuple_shapes[k], element(to));
      if (!r.ok()) return r;
      parts.push_back(r.value());
      shapes.push_back(r.value()->shape());
    }
    return Add(v.value->name() + ".resharded", Opcode::kTuple, Shape::Tuple(shapes), parts);
  }
  const int64_t a = OneTiledDim(from), b = OneTiledDim(to);
  if (a >= 0 && to.kind == HloSharding::Kind::kTiled)
    if (HloInstruction* r = RebroadcastForTile(v, global, a, to)) return r;
  if (a >= 0 && b >= 0 && a != b && global.dims[b] % n_ == 0)
    return AllToAll(v.value, global, a, b);
  if (from.kind == HloSharding::Kind::kTiled && to.kind == HloSharding::Kind::kTiled) {
    if (std::optional<HloSharding> within = Refinement(from, to, global.dims.size())) {
      // Each device's new tile lies inside the one it holds: a slice of it, no collective. A
      // broadcast newly split only along dimensions it creates is broadcast to the new tile
      // instead, so the whole is never written (a row vector meeting vocabulary-split logits).
      const hlo::IntList* made =
          v.value->opcode() == Opcode::kBroadcast ? v.value->dimensions() : nullptr;
      bool along_made = made != nullptr;
      for (size_t d = 0; made && d < global.dims.size(); ++d)
        if (within->ShardsAlong(d) > 1 &&
            std::find(made->begin(), made->end(), static_cast<int64_t>(d)) != made->end())
          along_made = false;
      Result<Shape> tile = LocalShape(global, to);
      if (along_made && tile.ok()) {
        HloInstruction* b = Add(v.value->name() + ".shard", Opcode::kBroadcast, tile.value(),
                                {v.value->operand(0)});
        b->SetAttr("dimensions", *made);
        return b;
      }
      Result<Shape> held = LocalShape(global, from);
      if (held.ok()) return DynamicSliceOf(v.value, held.value(), *within);
    }
  }
  HloInstruction* whole = v.value;
  if (from.kind == HloSharding::Kind::kTiled) {
    Result<HloInstruction*> g = AllGather(v.value, global, from);
    if (!g.ok()) return g;
    whole = g.value();
  }
  if (to.kind != HloSharding::Kind::kTiled) return whole;
  if (whole->opcode() == Opcode::kBroadcast && whole->dimensions()) {
    // A broadcast whose operand spans no split dimension: each device broadcasts its tile.
    bool spans = false;
    for (int64_t d : *whole->dimensions()) spans |= to.ShardsAlong(static_cast<size_t>(d)) > 1;
    Result<Shape> local = LocalShape(global, to);
    if (!spans && local.ok()) {
      HloInstruction* b =
          Add(whole->name() + ".shard", Opcode::kBroadcast, local.value(), {whole->operand(0)});
      b->SetAttr("dimensions", *whole->dimensions());
      return b;
    }
  }
  return DynamicSliceOf(whole, global, to);
}

}  // namespace tpusim::spmd
