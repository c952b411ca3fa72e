// Typed shardings: the `sharding=` attribute JAX and XLA print, in HloSharding's form
// ({replicated}, {manual}, {maximal device=N}, {devices=[8,1]<=[8]}, {devices=[2,1,4]0,...
// last_tile_dim_replicate}, tuples {{...}, {...}}) and in Shardy's mesh form
// ({mesh['x'=8], [{'x'}, {}]}, {mesh[], replicated}); and Shardy's meshes for replica groups
// (mesh['x'=2,'y'=4] {'y'}).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/status.h"

namespace tpusim::hlo {

struct HloSharding {
  enum class Kind { kReplicated, kManual, kMaximal, kTiled, kTuple };
  Kind kind = Kind::kReplicated;
  // kTiled: shards per array dimension, then (when last_tile_dim_replicate) the number of
  // copies of each tile; `devices` lists the device of each tile in row-major order.
  std::vector<int64_t> tile_dims;
  std::vector<int64_t> devices;
  bool last_tile_dim_replicate = false;
  int64_t device = 0;                 // kMaximal
  std::vector<HloSharding> elements;  // kTuple
  bool operator==(const HloSharding&) const = default;

  static HloSharding Replicated() { return {}; }
  // Shards of array dimension `dim` (1 when it is not split).
  int64_t ShardsAlong(size_t dim) const;
  // The tile index of `device` along each array dimension; empty if the device holds none.
  std::vector<int64_t> TileIndexOf(int64_t device) const;
  std::string ToString() const;  // HloSharding's own form
};

// `text` is the attribute's value, braces included. Errors say what is wrong; the caller
// adds where.
Result<HloSharding> ParseSharding(std::string_view text);

// Whether a custom-call target is one of the sharding annotations the partitioner reads.
bool IsShardingCustomCall(std::string_view target);

// Shardy's mesh form of replica groups, `mesh['a'=2,'b'=4] {'b'}` (optionally with
// `, device_ids=(...)` and sub-axes 'a':(1)2): the groups, as XLA's
// MeshAxesReplicaGroupList::flattened_replica_groups computes them.
Result<std::vector<std::vector<int64_t>>> ExpandMeshReplicaGroups(std::string_view text);

}  // namespace tpusim::hlo
