// Tiles of global values: a device's part is the block at its tile index times the tile's
// extent along each split dimension.
#include "compiler/spmd/tiles.h"

namespace tpusim::spmd {
namespace {

hlo::HloSharding Recorded(const hlo::HloInstruction* i) {
  const std::string* raw = i ? i->RawAttr("sharding") : nullptr;
  if (!raw) return hlo::HloSharding::Replicated();
  hlo::Result<hlo::HloSharding> s = hlo::ParseSharding(*raw);
  return s.ok() ? s.value() : hlo::HloSharding::Replicated();
}

// The block of `global` that `device` holds: its first index and extent per dimension.
void Block(const hlo::Shape& global, const hlo::HloSharding& s, int64_t device,
           std::vector<int64_t>* start, std::vector<int64_t>* extent) {
  *extent = global.dims;
  start->assign(global.dims.size(), 0);
  std::vector<int64_t> idx = s.TileIndexOf(device);
  if (s.kind != hlo::HloSharding::Kind::kTiled || idx.size() != global.dims.size()) return;
  for (size_t d = 0; d < global.dims.size(); ++d) {
    (*extent)[d] = global.dims[d] / s.tile_dims[d];
    (*start)[d] = idx[d] * (*extent)[d];
  }
}

template <typename F>
void ForEachInBlock(const eval::Value& global, const std::vector<int64_t>& start,
                    const std::vector<int64_t>& extent, F f) {
  const std::vector<int64_t> strides = eval::Strides(global.dims());
  std::vector<int64_t> local(extent.size(), 0), at(extent.size());
  int64_t k = 0;
  bool empty = false;
  for (int64_t e : extent) empty |= e == 0;
  if (empty) return;
  do {
    for (size_t d = 0; d < at.size(); ++d) at[d] = start[d] + local[d];
    f(eval::Linear(at, strides), k++);
  } while (eval::NextIndex(local, extent));
}

}  // namespace

bool IsPartitioned(const hlo::HloModule& partitioned) {
  return partitioned.spmd_output_sharding.has_value();
}

hlo::HloSharding ParameterSharding(const hlo::HloModule& partitioned, int64_t number) {
  const auto& recorded = partitioned.spmd_parameters_shardings;
  if (number >= 0 && static_cast<size_t>(number) < recorded.size()) return recorded[number];
  for (const hlo::HloInstruction* p : partitioned.entry()->parameters()) {
    if (p->parameter_number() == number) return Recorded(p);
  }
  return hlo::HloSharding::Replicated();
}

hlo::HloSharding OutputSharding(const hlo::HloModule& partitioned, size_t leaf) {
  const hlo::HloInstruction* root = partitioned.entry()->root();
  hlo::HloSharding s = partitioned.spmd_output_sharding.value_or(Recorded(root));
  if (s.kind == hlo::HloSharding::Kind::kTuple) {
    return leaf < s.elements.size() ? s.elements[leaf] : hlo::HloSharding::Replicated();
  }
  return s;
}

eval::Value TileOf(const eval::Value& global, const hlo::HloSharding& s, int64_t device) {
  if (s.kind != hlo::HloSharding::Kind::kTiled || global.IsTuple()) return global;
  std::vector<int64_t> start, extent;
  Block(global.shape, s, device, &start, &extent);
  hlo::Shape shape = global.shape;
  shape.dims = extent;
  eval::Value tile = eval::Value::Zeros(shape);
  ForEachInBlock(global, start, extent,
                 [&](int64_t g, int64_t k) { tile.data[static_cast<size_t>(k)] = global.data[g]; });
  return tile;
}

void PutTile(eval::Value& global, const eval::Value& tile, const hlo::HloSharding& s,
             int64_t device) {
  if (s.kind != hlo::HloSharding::Kind::kTiled || global.IsTuple()) {
    global = tile;
    return;
  }
  std::vector<int64_t> start, extent;
  Block(global.shape, s, device, &start, &extent);
  ForEachInBlock(global, start, extent,
                 [&](int64_t g, int64_t k) { global.data[g] = tile.data[static_cast<size_t>(k)]; });
}

}  // namespace tpusim::spmd
