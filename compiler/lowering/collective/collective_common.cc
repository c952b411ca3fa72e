// What the collective emitters share; see collective_common.h.
#include "compiler/lowering/collective/collective_common.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/lowering/data/move_kernel.h"

namespace tpusim::lowering {

using hlo::HloInstruction;
using hlo::Opcode;

std::vector<std::vector<int>> Groups(const HloInstruction& instr, int cores) {
  std::vector<std::vector<int>> groups;
  if (const hlo::ReplicaGroups* g = instr.replica_groups())
    for (const auto& group : g->groups) groups.emplace_back(group.begin(), group.end());
  if (groups.empty() || (groups.size() == 1 && groups[0].empty())) {
    groups.assign(1, {});
    for (int c = 0; c < cores; ++c) groups[0].push_back(c);
  }
  // Every core in one group, as the evaluator requires (pipeline_fuzz found an all-to-all
  // over `mesh['x'=4]` on 8 cores dividing by its empty group).
  std::vector<int> seen(static_cast<size_t>(cores), 0);
  for (const auto& g : groups)
    for (int c : g)
      if (c >= 0 && c < cores) ++seen[static_cast<size_t>(c)];
  for (int c = 0; c < cores; ++c)
    if (seen[static_cast<size_t>(c)] != 1)
      throw std::invalid_argument("replica_groups put core " + std::to_string(c) + " in " +
                                  std::to_string(seen[static_cast<size_t>(c)]) +
                                  " groups; each core belongs to exactly one");
  return groups;
}

// Ring order of the group holding `core`: its members in board-ring order.
std::vector<int> RingOf(const std::vector<std::vector<int>>& groups, const std::vector<int>& ring,
                        int core) {
  for (const auto& g : groups)
    if (std::find(g.begin(), g.end(), core) != g.end()) {
      std::vector<int> out;
      for (int c : ring)
        if (std::find(g.begin(), g.end(), c) != g.end()) out.push_back(c);
      return out;
    }
  return {core};
}

bool IsMaxReduction(const HloInstruction& instr) {
  const hlo::HloComputation* f = instr.to_apply();
  return f && f->root()->opcode() == Opcode::kMaximum;
}

CollectiveStart BeginCollective(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  CollectiveStart st{
      CollectiveContext{c.address, c.ring, c.cores, c.mailbox, c.collective_stream ? 0 : c.mxus},
      {}};
  st.groups = Groups(instr, c.cores);
  if (instr.opcode() == Opcode::kAllReduceStart) {
    st.ctx.vmem_base = collectives::kAsyncRingVmemBase;
  }
  op.kind = KernelKind::kCollective;
  return st;
}

// Groups of one core each: the collective (all-reduce, all-gather, reduce-scatter or
// all-to-all among one member) is its operand, so each core copies it into the result, or
// does nothing when they share a buffer. Nothing when some group has more members, or for
// several operands or a copy not of whole 4-byte words.
std::optional<std::vector<std::string>> LoneMembers(const HloInstruction& instr,
                                                    const CollectiveStart& st, LoweredOp& op) {
  for (const auto& g : st.groups)
    if (g.size() != 1) return std::nullopt;
  if (instr.operand_count() != 1 || instr.shape().IsTuple()) return std::nullopt;
  const uint64_t bytes = ByteSize(instr.shape());
  if (bytes != ByteSize(instr.operand(0)->shape()) || bytes == 0 || bytes % 4) return std::nullopt;
  const uint64_t in = st.ctx.address(instr.operand(0)), out = st.ctx.address(&instr);
  std::string copy;
  if (in != out) {
    StridedMove move;
    move.dims = {static_cast<int64_t>(bytes / 4)};
    move.src_strides = move.dst_strides = {4};
    move.src = in, move.dst = out;
    copy = MoveKernel({move}, nullptr, instr.name());
  }
  op.kind = KernelKind::kDma;
  op.exact = true;
  op.hbm_bytes = in != out ? 2 * bytes : 0;
  return std::vector<std::string>(static_cast<size_t>(st.ctx.cores), copy);
}

// The result buffer of element `i` of a tuple-shaped collective: where the
// get-tuple-element that reads it (from the collective or from its all-reduce-done) lives;
// nullopt when nothing reads it.
std::optional<uint64_t> ElementAddress(const HloInstruction& instr, int64_t i,
                                       const CollectiveContext& ctx) {
  if (!instr.shape().IsTuple()) return ctx.address(&instr);
  for (const auto& u : instr.parent()->instructions()) {
    if (u->opcode() != Opcode::kGetTupleElement || u->GetInt("index").value_or(-1) != i) continue;
    const HloInstruction* from = u->operand(0);
    if (from->opcode() == Opcode::kAllReduceDone) from = from->operand(0);
    if (from == &instr) return ctx.address(u.get());
  }
  return std::nullopt;
}

}  // namespace tpusim::lowering
