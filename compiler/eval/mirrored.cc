// Mirrored evaluation (EvaluateMirrored): replicas that all receive the same arguments hold
// the same values at every op unless some op gives each replica its own value. This file
// finds such an op; without one, a single interpreter stands for every replica.
#include <algorithm>
#include <set>

#include "compiler/eval/evaluator.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

std::string Named(const HloInstruction& instr, const std::string& why) {
  return "%" + instr.name() + " (" + std::string(hlo::OpcodeName(instr.opcode())) + ") " + why;
}

// Why the groups of a collective differ between replicas: a group size that is not the
// same for all, or a replica in no group.
std::optional<std::string> UnevenGroups(const HloInstruction& instr, int64_t replicas) {
  const hlo::ReplicaGroups* g = instr.replica_groups();
  if (g == nullptr || g->groups.empty()) return std::nullopt;
  int64_t covered = 0;
  for (const std::vector<int64_t>& group : g->groups) {
    if (group.size() != g->groups[0].size())
      return Named(instr, "has replica groups of different sizes");
    covered += static_cast<int64_t>(group.size());
  }
  if (covered != replicas) return Named(instr, "leaves some replica out of its groups");
  return std::nullopt;
}

// Why a collective-permute differs between replicas: some replica receives zeros.
std::optional<std::string> UntargetedReplica(const HloInstruction& instr, int64_t replicas) {
  std::set<int64_t> targets;
  if (const hlo::PairList* pairs = instr.source_target_pairs())
    for (auto [s, t] : *pairs) targets.insert(t);
  if (static_cast<int64_t>(targets.size()) == replicas) return std::nullopt;
  return Named(instr, "sends to only some replicas (the others receive zeros)");
}

}  // namespace

std::optional<std::string> MirrorObstacle(const hlo::HloModule& module, int64_t replicas) {
  for (const auto& comp : module.computations()) {
    for (const auto& ptr : comp->instructions()) {
      const HloInstruction& instr = *ptr;
      std::optional<std::string> why;
      switch (instr.opcode()) {
        case Opcode::kReduceScatter:
        case Opcode::kReduceScatterStart:
          why = Named(instr, "gives each replica a different part");
          break;
        case Opcode::kReplicaId:
        case Opcode::kPartitionId:
          why = Named(instr, "gives each replica its own index");
          break;
        case Opcode::kCustomCall:  // entering a shard_map body: each device its own tile
        case Opcode::kAllToAll:
          why = Named(instr, "gives each replica a different part");
          break;
        case Opcode::kCollectivePermute:
        case Opcode::kCollectivePermuteStart:
          why = UntargetedReplica(instr, replicas);
          break;
        case Opcode::kAllReduce:
        case Opcode::kAllGather:
        case Opcode::kAllReduceStart:
        case Opcode::kAllGatherStart:
          why = UnevenGroups(instr, replicas);
          break;
        default:
          break;
      }
      if (why) return why;
    }
  }
  return std::nullopt;
}

}  // namespace tpusim::eval
