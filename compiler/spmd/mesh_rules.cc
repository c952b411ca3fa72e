// Partitioning rules over any tilings, 2-D meshes included (a batch over one mesh axis and
// features over another, partial replication): tried when the one-dimensional rules of
// op_rules.cc take none. Each works device by device from the tile indices the operands'
// shardings give it (HloSharding::TileIndexOf), as XLA's partitioner reasons on a tile
// assignment: the result's tile on each device, and which part of a sum it holds where a
// split dimension is contracted or reduced.
#include <map>
#include <optional>

#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Opcode;
using hlo::Result;
using hlo::Shape;

namespace {

// Device d's tile index along each dimension of a rank-`rank` value laid out as `s` (zeros
// when replicated); empty when it holds none.
std::vector<int64_t> TileOf(const HloSharding& s, size_t rank, int64_t d) {
  if (s.kind == HloSharding::Kind::kReplicated) return std::vector<int64_t>(rank, 0);
  return s.TileIndexOf(d);
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Whether a Local's layout is one these rules read: replicated or tiled, whole values.
bool Readable(const Local& l) { return (l.replicated() || l.tiled()) && !l.partial; }

}  // namespace

std::optional<HloSharding> Partitioner::ShardingOfTiles(
    const std::vector<int64_t>& shards, const std::vector<std::vector<int64_t>>& tile) const {
  const int64_t tiles = Product(shards);
  if (tiles == 0 || n_ % tiles != 0) return std::nullopt;
  const int64_t copies = n_ / tiles;
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;  // tile -> devices, row-major
  for (int64_t d = 0; d < n_; ++d) holders[tile[d]].push_back(d);
  if (static_cast<int64_t>(holders.size()) != tiles) return std::nullopt;
  if (tiles == 1) return HloSharding::Replicated();
  HloSharding s;
  s.kind = HloSharding::Kind::kTiled;
  s.tile_dims = shards;
  if (copies > 1) s.tile_dims.push_back(copies), s.last_tile_dim_replicate = true;
  for (const auto& [t, devices] : holders) {
    if (static_cast<int64_t>(devices.size()) != copies) return std::nullopt;
    s.devices.insert(s.devices.end(), devices.begin(), devices.end());
  }
  return s;
}

Rule Partitioner::FromDeviceTiles(const HloInstruction& i, const std::vector<int64_t>& shards,
                                  const std::vector<std::vector<int64_t>>& tile,
                                  const std::vector<int64_t>& part, int64_t parts,
                                  const std::vector<HloInstruction*>& operands,
                                  hlo::HloComputation* reducer,
                                  const std::function<HloInstruction*(HloInstruction*)>& then) {
  const std::optional<HloSharding> s = ShardingOfTiles(shards, tile);
  if (!s) return NoRule();
  const int64_t copies = n_ / Product(shards);
  // The all-reduce groups of a partial result: in each tile (the sharding lists a tile's
  // copies together; replicated: one tile of every device), one device per part.
  hlo::ReplicaGroups groups;
  if (copies % parts != 0) return NoRule();
  for (int64_t t = 0; t < n_ / copies; ++t) {
    std::map<int64_t, std::vector<int64_t>> by_part;
    for (int64_t k = 0; k < copies; ++k) {
      const int64_t d = s->kind == HloSharding::Kind::kTiled ? s->devices[t * copies + k] : k;
      by_part[part[d]].push_back(d);
    }
    if (static_cast<int64_t>(by_part.size()) != parts) return NoRule();
    for (int64_t j = 0; j < copies / parts; ++j) {
      std::vector<int64_t> g;
      for (const auto& [p, members] : by_part) {
        if (static_cast<int64_t>(members.size()) != copies / parts) return NoRule();
        g.push_back(members[j]);
      }
      groups.groups.push_back(std::move(g));
    }
  }
  Result<Shape> local = LocalShape(i.shape(), *s);
  if (!local.ok()) return NoRule();
  HloInstruction* v = Clone(i, local.value(), operands);
  if (then) v = then(v);
  if (parts == 1) return std::optional<Local>(Local{v, *s});
  if (pure_) {  // inside a fusion: its caller all-reduces, over every device only
    if (groups.groups.size() != 1) return NoRule();
    return std::optional<Local>(Local{v, *s, reducer});
  }
  return std::optional<Local>(Local{AllReduce(v, reducer, std::move(groups)), *s});
}

std::optional<Local> Partitioner::SlicedAlike(const Local& x, const Shape& global, int64_t dim,
                                              const Local& y, size_t y_rank, int64_t y_dim) {
  const size_t rank = global.dims.size();
  std::vector<int64_t> shards;
  for (size_t k = 0; k < rank; ++k) shards.push_back(x.sharding.ShardsAlong(k));
  shards[dim] = y.sharding.ShardsAlong(y_dim);
  std::vector<std::vector<int64_t>> tile(n_);
  for (int64_t d = 0; d < n_; ++d) {
    tile[d] = TileOf(x.sharding, rank, d);
    const std::vector<int64_t> t = TileOf(y.sharding, y_rank, d);
    if (tile[d].size() != rank || t.size() != y_rank) return std::nullopt;
    tile[d][dim] = t[y_dim];
  }
  const std::optional<HloSharding> s = ShardingOfTiles(shards, tile);
  if (!s) return std::nullopt;
  Result<HloInstruction*> v = Reshard(x, global, *s);
  if (!v.ok()) return std::nullopt;
  return Local{v.value(), *s};
}

Rule Partitioner::MeshDotRule(const HloInstruction& i) {
  Local lhs = Of(i.operand(0)), rhs = Of(i.operand(1));
  if (!Readable(lhs) || !Readable(rhs) || (lhs.replicated() && rhs.replicated())) return NoRule();
  auto list = [&](const char* key) {
    const hlo::IntList* l = i.GetIntList(key);
    return l ? *l : hlo::IntList{};
  };
  const hlo::IntList lb = list("lhs_batch_dims"), lc = list("lhs_contracting_dims");
  const hlo::IntList rb = list("rhs_batch_dims"), rc = list("rhs_contracting_dims");
  const size_t lrank = i.operand(0)->shape().dims.size();
  const size_t rrank = i.operand(1)->shape().dims.size();
  if (lb.size() != rb.size() || lc.size() != rc.size()) return NoRule();
  // A contracted dimension split in one operand only (a Megatron LM head's vocabulary, its
  // output gradient split by batch alone): the other operand, which holds it whole, takes
  // the same slices locally, as XLA's partitioner does, so the sum runs on the slices.
  for (size_t k = 0; k < lc.size(); ++k) {
    const int64_t a = lhs.sharding.ShardsAlong(lc[k]), b = rhs.sharding.ShardsAlong(rc[k]);
    std::optional<Local> sliced;
    if (a == 1 && b > 1) {
      if (!(sliced = SlicedAlike(lhs, i.operand(0)->shape(), lc[k], rhs, rrank, rc[k])))
        return NoRule();
      lhs = *sliced;
    } else if (b == 1 && a > 1) {
      if (!(sliced = SlicedAlike(rhs, i.operand(1)->shape(), rc[k], lhs, lrank, lc[k])))
        return NoRule();
      rhs = *sliced;
    }
  }
  auto free_dims = [](size_t rank, const hlo::IntList& a, const hlo::IntList& b) {
    std::vector<int64_t> f;
    for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
      if (!Contains(&a, d) && !Contains(&b, d)) f.push_back(d);
    return f;
  };
  const std::vector<int64_t> lf = free_dims(lrank, lb, lc), rf = free_dims(rrank, rb, rc);
  // The result's dimensions: batch, lhs free, rhs free (XLA's dot output order).
  std::vector<int64_t> shards;
  for (size_t k = 0; k < lb.size(); ++k) {
    if (lhs.sharding.ShardsAlong(lb[k]) != rhs.sharding.ShardsAlong(rb[k])) return NoRule();
    shards.push_back(lhs.sharding.ShardsAlong(lb[k]));
  }
  for (int64_t d : lf) shards.push_back(lhs.sharding.ShardsAlong(d));
  for (int64_t d : rf) shards.push_back(rhs.sharding.ShardsAlong(d));
  int64_t parts = 1;
  for (size_t k = 0; k < lc.size(); ++k) {
    if (lhs.sharding.ShardsAlong(lc[k]) != rhs.sharding.ShardsAlong(rc[k])) return NoRule();
    parts *= lhs.sharding.ShardsAlong(lc[k]);
  }
  std::vector<std::vector<int64_t>> tile(n_);
  std::vector<int64_t> part(n_, 0);
  for (int64_t d = 0; d < n_; ++d) {
    const std::vector<int64_t> li = TileOf(lhs.sharding, lrank, d),
                               ri = TileOf(rhs.sharding, rrank, d);
    if (li.size() != lrank || ri.size() != rrank) return NoRule();
    for (size_t k = 0; k < lb.size(); ++k) {
      if (li[lb[k]] != ri[rb[k]]) return NoRule();  // both operands' examples must match
      tile[d].push_back(li[lb[k]]);
    }
    for (int64_t f : lf) tile[d].push_back(li[f]);
    for (int64_t f : rf) tile[d].push_back(ri[f]);
    for (size_t k = 0; k < lc.size(); ++k) {
      if (li[lc[k]] != ri[rc[k]]) return NoRule();  // and their slices of the contraction
      part[d] = part[d] * lhs.sharding.ShardsAlong(lc[k]) + li[lc[k]];
    }
  }
  return FromDeviceTiles(i, shards, tile, part, parts, {lhs.value, rhs.value},
                         parts > 1 ? AddComputation(i.shape().type) : nullptr);
}

Rule Partitioner::MeshReduceRule(const HloInstruction& i) {
  if (i.operand_count() != 2 || !i.shape().IsArray()) return NoRule();
  const Local &in = Of(i.operand(0)), &init = Of(i.operand(1));
  const hlo::IntList* dims = i.dimensions();
  if (!dims || !Readable(in) || !in.tiled() || !init.replicated()) return NoRule();
  const size_t rank = i.operand(0)->shape().dims.size();
  std::vector<int64_t> shards;
  int64_t parts = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (Contains(dims, static_cast<int64_t>(d)))
      parts *= in.sharding.ShardsAlong(d);
    else
      shards.push_back(in.sharding.ShardsAlong(d));
  }
  std::vector<std::vector<int64_t>> tile(n_);
  std::vector<int64_t> part(n_, 0);
  for (int64_t d = 0; d < n_; ++d) {
    const std::vector<int64_t> t = TileOf(in.sharding, rank, d);
    if (t.size() != rank) return NoRule();
    for (size_t k = 0; k < rank; ++k) {
      if (Contains(dims, static_cast<int64_t>(k)))
        part[d] = part[d] * in.sharding.ShardsAlong(k) + t[k];
      else
        tile[d].push_back(t[k]);
    }
  }
  return FromDeviceTiles(i, shards, tile, part, parts, {in.value, init.value}, i.to_apply());
}

// Transpose and broadcast move each tiled dimension to where `dimensions` says.
Rule Partitioner::MeshMoveRule(const HloInstruction& i) {
  const Local& in = Of(i.operand(0));
  const hlo::IntList* dims = i.dimensions();
  if (!dims || !Readable(in) || !in.tiled() || !i.shape().IsArray()) return NoRule();
  const size_t rank = i.operand(0)->shape().dims.size(), out_rank = i.shape().dims.size();
  if (dims->size() != (i.opcode() == Opcode::kTranspose ? out_rank : rank)) return NoRule();
  // where[k]: the result dimension operand dimension k becomes.
  std::vector<int64_t> where(rank);
  for (size_t k = 0; k < dims->size(); ++k) {
    if (i.opcode() == Opcode::kTranspose)
      where[(*dims)[k]] = static_cast<int64_t>(k);
    else
      where[k] = (*dims)[k];
  }
  std::vector<int64_t> shards(out_rank, 1);
  for (size_t k = 0; k < rank; ++k) shards[where[k]] = in.sharding.ShardsAlong(k);
  std::vector<std::vector<int64_t>> tile(n_, std::vector<int64_t>(out_rank, 0));
  for (int64_t d = 0; d < n_; ++d) {
    const std::vector<int64_t> t = TileOf(in.sharding, rank, d);
    if (t.size() != rank) return NoRule();
    for (size_t k = 0; k < rank; ++k) tile[d][where[k]] = t[k];
  }
  return FromDeviceTiles(i, shards, tile, std::vector<int64_t>(n_, 0), 1, {in.value}, nullptr);
}

// A reshape keeps each device's tile contiguous when, in every group of dimensions it
// merges or splits (equal element counts on both sides), only the group's major dimension is
// split and the result's major dimension of the group divides as evenly: [B, S, H] to
// [B*S, H] with B over 'data' and H over 'model', or H to [heads, H/heads].
Rule Partitioner::MeshReshapeRule(const HloInstruction& i) {
  const Local& in = Of(i.operand(0));
  if (!Readable(in) || !in.tiled() || !i.shape().IsArray()) return NoRule();
  const std::vector<int64_t>&from = i.operand(0)->shape().dims, &to = i.shape().dims;
  std::vector<int64_t> shards(to.size(), 1);
  std::vector<int64_t> source(to.size(), -1);  // the input dimension whose tiles it takes
  size_t a = 0, b = 0;
  while (a < from.size() || b < to.size()) {
    const size_t a0 = a, b0 = b;
    int64_t pa = a < from.size() ? from[a++] : 1, pb = b < to.size() ? to[b++] : 1;
    while (pa != pb) {
      if (pa < pb && a < from.size())
        pa *= from[a++];
      else if (pb < pa && b < to.size())
        pb *= to[b++];
      else
        return NoRule();
    }
    size_t major_in = a0, major_out = b0;  // the first dimensions of more than one element
    while (major_in < a && from[major_in] == 1) ++major_in;
    while (major_out < b && to[major_out] == 1) ++major_out;
    for (size_t d = a0; d < a; ++d) {
      const int64_t s = in.sharding.ShardsAlong(d);
      if (s == 1) continue;
      if (d != major_in || major_out == b || to[major_out] % s != 0) return NoRule();
      shards[major_out] = s, source[major_out] = static_cast<int64_t>(d);
    }
  }
  std::vector<std::vector<int64_t>> tile(n_, std::vector<int64_t>(to.size(), 0));
  for (int64_t d = 0; d < n_; ++d) {
    const std::vector<int64_t> t = TileOf(in.sharding, from.size(), d);
    if (t.size() != from.size()) return NoRule();
    for (size_t k = 0; k < to.size(); ++k)
      if (source[k] >= 0) tile[d][k] = t[source[k]];
  }
  return FromDeviceTiles(i, shards, tile, std::vector<int64_t>(n_, 0), 1, {in.value}, nullptr);
}

// A convolution, as a dot over its feature dimensions: the batch and the output features
// keep their tiles, split input features (matching the kernel's) make parts of a sum, and
// no spatial dimension may be split (that needs halos). Feature or batch groups: none.
Rule Partitioner::MeshConvRule(const HloInstruction& i) {
  const Local &lhs = Of(i.operand(0)), &rhs = Of(i.operand(1));
  const hlo::ConvDims* cd = i.conv_dims();
  if (!cd || !Readable(lhs) || !Readable(rhs) || (lhs.replicated() && rhs.replicated()) ||
      i.GetInt("feature_group_count").value_or(1) != 1 ||
      i.GetInt("batch_group_count").value_or(1) != 1)
    return NoRule();
  for (size_t k = 0; k < cd->input_spatial.size(); ++k)
    if (lhs.sharding.ShardsAlong(cd->input_spatial[k]) != 1 ||
        rhs.sharding.ShardsAlong(cd->kernel_spatial[k]) != 1)
      return NoRule();
  const int64_t parts = lhs.sharding.ShardsAlong(cd->input_feature);
  if (parts != rhs.sharding.ShardsAlong(cd->kernel_input_feature)) return NoRule();
  const size_t lrank = i.operand(0)->shape().dims.size();
  const size_t rrank = i.operand(1)->shape().dims.size();
  const size_t out_rank = i.shape().dims.size();
  std::vector<int64_t> shards(out_rank, 1);
  shards[cd->output_batch] = lhs.sharding.ShardsAlong(cd->input_batch);
  shards[cd->output_feature] = rhs.sharding.ShardsAlong(cd->kernel_output_feature);
  std::vector<std::vector<int64_t>> tile(n_, std::vector<int64_t>(out_rank, 0));
  std::vector<int64_t> part(n_, 0);
  for (int64_t d = 0; d < n_; ++d) {
    const std::vector<int64_t> li = TileOf(lhs.sharding, lrank, d),
                               ri = TileOf(rhs.sharding, rrank, d);
    if (li.size() != lrank || ri.size() != rrank) return NoRule();
    if (li[cd->input_feature] != ri[cd->kernel_input_feature]) return NoRule();
    tile[d][cd->output_batch] = li[cd->input_batch];
    tile[d][cd->output_feature] = ri[cd->kernel_output_feature];
    part[d] = li[cd->input_feature];
  }
  return FromDeviceTiles(i, shards, tile, part, parts, {lhs.value, rhs.value},
                         parts > 1 ? AddComputation(i.shape().type) : nullptr);
}

}  // namespace tpusim::spmd
