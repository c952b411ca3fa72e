// Internal: the state of one partitioning. Each instruction of the global entry computation
// becomes a Local: the per-device instruction that holds its value, and how the global value
// is laid out over the devices (replicated: the whole value; tiled: this device's tile;
// manual: a shard_map body's per-device value; tuple: per element).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/sharding.h"

namespace tpusim::spmd {

struct Local {
  hlo::HloInstruction* value = nullptr;
  hlo::HloSharding sharding;
  // Inside a fusion: `value` is this device's part of a reduction over a tiled dimension,
  // combined by this reducer in an all-reduce after the fusion (XLA's partial sharding).
  hlo::HloComputation* partial = nullptr;
  bool manual() const { return sharding.kind == hlo::HloSharding::Kind::kManual; }
  bool replicated() const { return sharding.kind == hlo::HloSharding::Kind::kReplicated; }
  bool tiled() const { return sharding.kind == hlo::HloSharding::Kind::kTiled; }
};

// A partitioning rule's answer: the op's Local, or nullopt when the op takes no tiled
// strategy (it then runs replicated on gathered operands).
using Rule = hlo::Result<std::optional<Local>>;
inline Rule NoRule() { return std::optional<Local>(); }

// Ops the elementwise rule partitions (op_rules.cc), and reader_layouts.cc follows: every
// elementwise category, and copy.
inline bool IsElementwiseOp(const hlo::HloInstruction& i) {
  const hlo::OpCategory c = hlo::GetOpcodeInfo(i.opcode()).category;
  return c == hlo::OpCategory::kElementwiseUnary || c == hlo::OpCategory::kElementwiseBinary ||
         c == hlo::OpCategory::kElementwiseTernary || i.opcode() == hlo::Opcode::kCopy;
}

// Whether list `l` (absent: empty) holds dimension `d`.
inline bool Contains(const hlo::IntList* l, int64_t d) {
  return l && std::find(l->begin(), l->end(), d) != l->end();
}

class Partitioner {
 public:
  Partitioner(hlo::HloModule& m, int64_t devices) : m_(m), n_(devices) {}
  hlo::Status Run();

  // Partitioning rules (op_rules.cc): the Local of `i`, or nullopt when the op takes no
  // tiled strategy (it then runs replicated).
  hlo::Result<std::optional<Local>> TiledRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> ShardingCall(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> DotRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> ConvolutionRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> GatherRule(const hlo::HloInstruction& i);  // gather_rules.cc
  hlo::Result<std::optional<Local>> MaskedGatherRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> ScatterRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> ScatterAddOfShares(const hlo::HloInstruction& i,
                                                       hlo::HloInstruction* indices,
                                                       hlo::HloInstruction* updates);
  // Slices, pads, concatenates, reverses and sorts that leave the tiled dimension whole
  // (layout_rules.cc); reduce-window and select-and-scatter with a window of one along it.
  hlo::Result<std::optional<Local>> LayoutRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> WindowRule(const hlo::HloInstruction& i);
  // Batch normalization over a split batch, expanded as XLA's BatchNormExpander writes it
  // (batch_norm_rules.cc): per-device sums, all-reduced, then the whole batch's statistics.
  hlo::Result<std::optional<Local>> BatchNormRule(const hlo::HloInstruction& i);
  // Fusions and while loops (called_rules.cc): their computations partitioned for the
  // operands' layouts; a fusion only when its body needs no collective.
  hlo::Result<std::optional<Local>> FusionRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> WhileRule(const hlo::HloInstruction& i);

  // Rules over any tilings, 2-D meshes included (mesh_rules.cc), tried when the ones above
  // take none: dots whose operands' tiles line up (partial sums all-reduced within each
  // result tile), convolutions over their feature dimensions, reduces, transposes,
  // broadcasts and reshapes.
  // `x` (global shape `global`) sliced along `dim` as `y` (rank `y_rank`) is along `y_dim`
  // on each device, the rest of its layout kept; nullopt when that makes no sharding.
  std::optional<Local> SlicedAlike(const Local& x, const hlo::Shape& global, int64_t dim,
                                   const Local& y, size_t y_rank, int64_t y_dim);
  hlo::Result<std::optional<Local>> MeshDotRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> MeshReduceRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> MeshMoveRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> MeshReshapeRule(const hlo::HloInstruction& i);
  hlo::Result<std::optional<Local>> MeshConvRule(const hlo::HloInstruction& i);
  // `i` on every device with `operands`, its result tiled `shards` per dimension, device d
  // holding tile `tile[d]` and part `part[d]` of `parts` of a sum `reducer` combines (parts 1:
  // a whole value); `then` (when given) maps the clone before the parts are combined.
  // nullopt when the tiles do not make a sharding (unequal copies).
  hlo::Result<std::optional<Local>> FromDeviceTiles(
      const hlo::HloInstruction& i, const std::vector<int64_t>& shards,
      const std::vector<std::vector<int64_t>>& tile, const std::vector<int64_t>& part,
      int64_t parts, const std::vector<hlo::HloInstruction*>& operands,
      hlo::HloComputation* reducer,
      const std::function<hlo::HloInstruction*(hlo::HloInstruction*)>& then = nullptr);

  // The sharding under which device d holds tile `tile[d]` of a value split `shards` per
  // dimension (row-major tiles, copies of a tile in device order); nullopt when the devices do
  // not share the tiles evenly.
  std::optional<hlo::HloSharding> ShardingOfTiles(
      const std::vector<int64_t>& shards, const std::vector<std::vector<int64_t>>& tile) const;

  // Resharding (reshard.cc): `v` (holding global shape `global`) laid out as `to`. A value
  // resharded to a layout it was resharded to before gets the same instruction back (XLA's
  // reshard cache: a weight FSDP gathers for the forward dot serves the backward one too).
  hlo::Result<hlo::HloInstruction*> Reshard(const Local& v, const hlo::Shape& global,
                                            const hlo::HloSharding& to);
  // This device's shape of a `global` value laid out as `s`.
  hlo::Result<hlo::Shape> LocalShape(const hlo::Shape& global, const hlo::HloSharding& s) const;
  // A sharding tiled along `dim` of a rank-`rank` array over every device in order.
  hlo::HloSharding Tiled1D(size_t rank, size_t dim) const;
  // The one dimension `s` splits over all devices in order (no replication), or -1.
  int64_t OneTiledDim(const hlo::HloSharding& s) const;
  // One group of every device, in order.
  hlo::ReplicaGroups AllDevices() const;
  // A collective's attributes as XLA's partitioner writes them: a new channel, `groups` of
  // global device ids, the gathered or split `dimension` if any.
  void MarkCollective(hlo::HloInstruction& c, hlo::ReplicaGroups groups,
                      std::optional<int64_t> dimension = std::nullopt);
  // `to_apply` of a reduce or reducing collective: the scalar computation `reducer`.
  void SetReducer(hlo::HloInstruction& c, hlo::HloComputation* reducer);
  // all-reduce of `v` by `reducer` (a scalar computation) within `groups` (none: every
  // device).
  hlo::HloInstruction* AllReduce(hlo::HloInstruction* v, hlo::HloComputation* reducer,
                                 std::optional<hlo::ReplicaGroups> groups = std::nullopt);
  // The whole of a value each device holds a part of, combined by `reducer`: an all-reduce,
  // or inside a fusion a partial Local the fusion's caller all-reduces.
  Local Combined(hlo::HloInstruction* part, hlo::HloComputation* reducer);
  hlo::HloComputation* AddComputation(hlo::PrimitiveType t);  // scalar a + b
  // The layouts the entry's values are read in (reader_layouts.cc): where every reader of a
  // value takes one 1-D tiling over all devices, found backwards from the stated shardings.
  void FindReaderLayouts();

  // New instructions go to the computation being partitioned under names derived from `base`.
  hlo::HloInstruction* Add(std::string_view base, hlo::Opcode op, hlo::Shape shape,
                           const std::vector<hlo::HloInstruction*>& operands);
  hlo::HloInstruction* Clone(const hlo::HloInstruction& from, hlo::Shape shape,
                             const std::vector<hlo::HloInstruction*>& operands);
  const Local& Of(const hlo::HloInstruction* old) const { return local_.at(old); }
  hlo::HloModule& module() { return m_; }
  int64_t devices() const { return n_; }

 private:
  // Partitions `c` in place for its parameters' layouts and returns its root's Local (laid
  // out as `root_as` when given); `c` becomes a copy of its global form first when another
  // op had it partitioned. `pure` (a fusion's body): nullopt, with `c` unchanged, when any
  // instruction would need a collective.
  hlo::Result<std::optional<Local>> PartitionCalled(hlo::HloComputation*& c,
                                                    const std::vector<hlo::HloSharding>& params,
                                                    bool pure,
                                                    const std::optional<hlo::HloSharding>& root_as);
  hlo::Result<Local> PartitionParameter(const hlo::HloInstruction& i, const hlo::HloSharding& s);
  hlo::Result<Local> PartitionOne(const hlo::HloInstruction& i);
  hlo::Result<Local> Replicated(const hlo::HloInstruction& i);
  hlo::Result<hlo::HloInstruction*> AllGather(hlo::HloInstruction* v, const hlo::Shape& global,
                                              const hlo::HloSharding& from);
  // A broadcast `v` split along `split` (a dimension of its operand) wanted split only along
  // dimensions it creates (`to`): its operand gathered whole and broadcast to the new tile,
  // when the operand is no larger than that tile (an all-to-all moves the tile); else null.
  hlo::HloInstruction* RebroadcastForTile(const Local& v, const hlo::Shape& global, int64_t split,
                                          const hlo::HloSharding& to);
  hlo::Result<hlo::HloInstruction*> AllToAll(hlo::HloInstruction* v, const hlo::Shape& global,
                                             int64_t from_dim, int64_t to_dim);
  // Where every device's tile under `to` lies inside its tile under `from` (rank-`rank`
  // arrays): the layout of the new tiles within the held ones; else nullopt.
  std::optional<hlo::HloSharding> Refinement(const hlo::HloSharding& from,
                                             const hlo::HloSharding& to, size_t rank) const;
  // A new s32 scalar constant.
  hlo::HloInstruction* S32Constant(int64_t v);
  // (p / step) % count for the device index `p` (>= 0), on the scalar path: a shift and a
  // mask for powers of two (as XLA's simplifier rewrites them), else a divide and a remainder.
  hlo::HloInstruction* Digit(hlo::HloInstruction* p, int64_t step, int64_t count);
  // Where the tile along `d` of device p under `to` is a sum of p's bits each times a
  // weight (n a power of two): that offset (times `extent`) from `partition` (the device's
  // index) on the scalar path; else null.
  hlo::HloInstruction* BitWeightedOffset(const hlo::HloSharding& to, size_t d, int64_t extent,
                                         hlo::HloInstruction* partition);
  hlo::Result<hlo::HloInstruction*> DynamicSliceOf(hlo::HloInstruction* v, const hlo::Shape& global,
                                                   const hlo::HloSharding& to);
  // This device's index (partition-id as s32), made once per computation.
  hlo::HloInstruction* PartitionIndex();
  // The offset along `d` of this device's tile under `to`, tiles `extent` long (s32 scalar).
  hlo::HloInstruction* TileOffset(const hlo::HloSharding& to, size_t d, int64_t extent);

  hlo::HloModule& m_;
  int64_t n_;
  hlo::HloComputation* comp_ = nullptr;           // being partitioned
  const hlo::HloInstruction* current_ = nullptr;  // the global op being partitioned
  bool pure_ = false;                             // partitioning a fusion's body: no collectives
  bool impure_ = false;                           // ... and one was needed
  int64_t next_channel_ = 1;
  std::unordered_map<const hlo::HloComputation*, hlo::HloInstruction*> partition_ids_;
  // Each partitioned computation's instructions and root as they were, to copy it whole.
  struct Global {
    std::vector<const hlo::HloInstruction*> instructions;
    const hlo::HloInstruction* root = nullptr;
  };
  std::unordered_map<const hlo::HloComputation*, Global> globals_;
  hlo::HloComputation* CopyOfGlobal(const hlo::HloComputation& c);
  std::unordered_set<const hlo::HloInstruction*> remove_;  // replaced or rolled back
  std::unordered_map<const hlo::HloInstruction*, Local> local_;
  std::unordered_map<const hlo::HloInstruction*, hlo::HloSharding> wanted_;  // FindReaderLayouts
  std::unordered_map<int, hlo::HloComputation*> adders_;
  hlo::Result<hlo::HloInstruction*> ReshardOnce(const Local& v, const hlo::Shape& global,
                                                const hlo::HloSharding& to);
  std::map<std::pair<const hlo::HloInstruction*, std::string>, hlo::HloInstruction*>
      reshards_;  // (value, "its layout -> target layout") -> its resharded form (Reshard)
};

}  // namespace tpusim::spmd
