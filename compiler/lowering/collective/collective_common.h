// What the collective emitters share (internal to compiler/lowering/collective/): the
// context a collective is lowered in, its replica groups as rings of cores, and the copies
// that stand for a collective among lone members.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/collectives/ring_allreduce.h"
#include "compiler/collectives/ring_emitter.h"
#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/lower.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

struct CollectiveContext {
  std::function<uint64_t(const hlo::HloInstruction*)> address;
  std::vector<int> ring;  // every core in torus ring order
  int cores = 8;
  std::optional<collectives::Mailbox> mailbox;  // CollectiveMailbox: the entry barrier
  int mxus = 2;  // per core: drain barriers between a collective's rounds (0: the
                 // collective stream's, which has no MXU)
  // Where an all-reduce's buffers start in VMEM: offset 0, or for an all-reduce-start
  // (which runs beside compute kernels) the collective stream's region.
  uint64_t vmem_base = 0;
};

// The replica groups of `instr` (none: every core in id order); throws unless each core is
// in exactly one.
std::vector<std::vector<int>> Groups(const hlo::HloInstruction& instr, int cores);

// Ring order of the group holding `core`: its members in board-ring order.
std::vector<int> RingOf(const std::vector<std::vector<int>>& groups, const std::vector<int>& ring,
                        int core);

// Whether `instr`'s reducer is a maximum (else a sum).
bool IsMaxReduction(const hlo::HloInstruction& instr);

// What every collective emitter starts from: its groups and its kind.
struct CollectiveStart {
  CollectiveContext ctx;
  std::vector<std::vector<int>> groups;
};

// The context of `instr` on the board of `c` (an all-reduce-start's ring in the collective
// stream's VMEM region); marks `op` a collective.
CollectiveStart BeginCollective(const hlo::HloInstruction& instr, const OpContext& c,
                                LoweredOp& op);

// Groups of one core each: the collective (all-reduce, all-gather, reduce-scatter or
// all-to-all among one member) is its operand, so each core copies it into the result, or
// does nothing when they share a buffer. Nothing when some group has more members, or for
// several operands or a copy not of whole 4-byte words.
std::optional<std::vector<std::string>> LoneMembers(const hlo::HloInstruction& instr,
                                                    const CollectiveStart& st, LoweredOp& op);

// The result buffer of element `i` of a tuple-shaped collective: where the
// get-tuple-element that reads it (from the collective or from its all-reduce-done) lives;
// nullopt when nothing reads it.
std::optional<uint64_t> ElementAddress(const hlo::HloInstruction& instr, int64_t i,
                                       const CollectiveContext& ctx);

}  // namespace tpusim::lowering
