// Internal: the state of one partitioning. Each instruction of the global entry computation
// becomes a Local: the per-device instruction that holds its value, and how the global value
// is laid out over the devices (replicated: the whole value; tiled: this device's tile;
// manual: a shard_map body's per-device value; tuple: per element).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/sharding.h"

namespace tpusim::spmd {

struct Local {
  hlo::HloInstruction* value = nullptr;
  hlo::HloSharding sharding;
  bool manual() const { return sharding.kind == hlo::HloSharding::Kind::kManual; }
  bool replicated() const { return sharding.kind == hlo::HloSharding::Kind::kReplicated; }
  bool tiled() const { return sharding.kind == hlo::HloSharding::Kind::kTiled; }
};

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
  hlo::Result<std::optional<Local>> ScatterRule(const hlo::HloInstruction& i);

  // Resharding (reshard.cc): `v` (holding global shape `global`) laid out as `to`.
  hlo::Result<hlo::HloInstruction*> Reshard(const Local& v, const hlo::Shape& global,
                                            const hlo::HloSharding& to);
  // This device's shape of a `global` value laid out as `s`.
  hlo::Result<hlo::Shape> LocalShape(const hlo::Shape& global, const hlo::HloSharding& s) const;
  // A sharding tiled along `dim` of a rank-`rank` array over every device in order.
  hlo::HloSharding Tiled1D(size_t rank, size_t dim) const;
  // The one dimension `s` splits over all devices in order (no replication), or -1.
  int64_t OneTiledDim(const hlo::HloSharding& s) const;
  // all-reduce of `v` over every device by `reducer` (a scalar computation).
  hlo::HloInstruction* AllReduce(hlo::HloInstruction* v, hlo::HloComputation* reducer);
  hlo::HloComputation* AddComputation(hlo::PrimitiveType t);  // scalar a + b

  // New instructions go to the entry under names derived from `base`.
  hlo::HloInstruction* Add(std::string_view base, hlo::Opcode op, hlo::Shape shape,
                           const std::vector<hlo::HloInstruction*>& operands);
  hlo::HloInstruction* Clone(const hlo::HloInstruction& from, hlo::Shape shape,
                             const std::vector<hlo::HloInstruction*>& operands);
  const Local& Of(const hlo::HloInstruction* old) const { return local_.at(old); }
  hlo::HloModule& module() { return m_; }
  int64_t devices() const { return n_; }

 private:
  hlo::Result<Local> PartitionOne(const hlo::HloInstruction& i);
  hlo::Result<Local> Replicated(const hlo::HloInstruction& i);
  hlo::Result<hlo::HloInstruction*> AllGather(hlo::HloInstruction* v, const hlo::Shape& global,
                                              const hlo::HloSharding& from);
  hlo::Result<hlo::HloInstruction*> DynamicSliceOf(hlo::HloInstruction* v, const hlo::Shape& global,
                                                   const hlo::HloSharding& to);

  hlo::HloModule& m_;
  int64_t n_;
  hlo::HloComputation* entry_ = nullptr;
  int64_t next_channel_ = 1;
  hlo::HloInstruction* partition_id_ = nullptr;
  std::unordered_map<const hlo::HloInstruction*, Local> local_;
  std::unordered_map<int, hlo::HloComputation*> adders_;
};

}  // namespace tpusim::spmd
