// The all-reduce emitter (emitters.h): one ring or butterfly program per core, an
// all-reduce-start's in the collective stream's VMEM region (docs/collectives.md).
#include <algorithm>
#include <optional>

#include "compiler/assembly/asm_util.h"
#include "compiler/collectives/butterfly_allreduce.h"
#include "compiler/collectives/ring_allreduce.h"
#include "compiler/lowering/collective/collective_common.h"
#include "compiler/lowering/driver/emitters.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

constexpr uint64_t kVreg = 4096;
constexpr uint64_t kSegment = collectives::kRingSegmentBytes;
constexpr uint64_t kSingleSegment = collectives::kRingSingleSegmentBytes;

// The all-reduce size the ring program takes for `bytes` over `n` cores.
uint64_t AllReduceBytes(uint64_t bytes, int n) {
  const uint64_t granule = kVreg * static_cast<uint64_t>(n);
  uint64_t padded = (bytes + granule - 1) / granule * granule;
  if (padded > kSingleSegment) return (bytes + kSegment - 1) / kSegment * kSegment;
  // Large enough to go as two halves, one each way: pad to whole registers per half.
  const uint64_t halves = (bytes + 2 * granule - 1) / (2 * granule) * (2 * granule);
  if (halves >= collectives::kRingHalvesMinBytes && halves <= kSingleSegment) return halves;
  return padded;
}

// The VMEM layout of `ctx` on the spec of an all-reduce of `bytes` (unpadded): a butterfly
// beside compute kernels takes only the top of VMEM its buffers need. Records in `op` where
// the buffers of an asynchronous one start.
void SetLayout(collectives::RingAllReduceSpec& spec, const CollectiveContext& ctx, uint64_t bytes,
               LoweredOp& op) {
  spec.vmem_base = ctx.vmem_base;
  if (ctx.vmem_base == 0) return;
  const int n = static_cast<int>(spec.ring.size());
  if (collectives::TakesButterfly(n, bytes))
    spec.vmem_base = collectives::kCoreVmemBytes - collectives::ButterflyVmemBytes(n, bytes);
  const auto base = static_cast<int64_t>(spec.vmem_base);
  op.collective_vmem_base =
      op.collective_vmem_base < 0 ? base : std::min(op.collective_vmem_base, base);
}

// The spec of an all-reduce of `bytes` (unpadded) over the ring `members`, with its layout.
collectives::RingAllReduceSpec SpecFor(const std::vector<int>& members, uint64_t bytes,
                                       collectives::ReduceOp reduce, const std::string& tag,
                                       const CollectiveContext& ctx, LoweredOp& op) {
  collectives::RingAllReduceSpec spec;
  spec.ring = members;
  spec.bytes = AllReduceBytes(bytes, static_cast<int>(members.size()));
  spec.op = reduce;
  spec.tag = tag;
  spec.flag_base = assembly::kCollectiveFlagBase;
  spec.mailbox = ctx.mailbox;
  SetLayout(spec, ctx, bytes, op);
  return spec;
}

std::vector<std::string> AllReduce(const std::vector<std::vector<int>>& groups, uint64_t address,
                                   uint64_t bytes, const std::string& tag,
                                   const CollectiveContext& ctx, collectives::ReduceOp reduce,
                                   LoweredOp& op) {
  std::vector<std::string> programs;
  for (int c = 0; c < ctx.cores; ++c) {
    const std::vector<int> members = RingOf(groups, ctx.ring, c);
    if (members.size() < 2) {
      programs.emplace_back();
      continue;
    }
    collectives::RingAllReduceSpec spec = SpecFor(members, bytes, reduce, tag, ctx, op);
    spec.hbm_address = address;
    const auto pos = std::find(members.begin(), members.end(), c) - members.begin();
    if (collectives::TakesButterfly(static_cast<int>(members.size()), bytes)) {
      spec.bytes = bytes;
      programs.push_back(collectives::ButterflyAllReduceProgram(spec, static_cast<int>(pos)));
      op.hbm_bytes = 2 * bytes;
      continue;
    }
    if (spec.bytes != bytes && op.note.empty())
      op.note = "ring granule: " + std::to_string(bytes) + " bytes padded to " +
                std::to_string(spec.bytes);
    programs.push_back(collectives::RingAllReduceProgram(spec, static_cast<int>(pos)));
    op.hbm_bytes = 2 * spec.bytes;
  }
  op.kind = KernelKind::kCollective;
  return programs;
}

// One exact ring over `pieces` back to back, each segment gathering its parts from their
// buffers and writing its results to theirs; ring padding stays in VMEM. Empty for rings of
// one core.
std::vector<std::string> PiecesAllReduce(const std::vector<collectives::RingPiece>& pieces,
                                         uint64_t valid,
                                         const std::vector<std::vector<int>>& groups,
                                         const CollectiveContext& ctx, collectives::ReduceOp reduce,
                                         const std::string& tag, LoweredOp& op) {
  std::vector<std::string> programs;
  for (int c = 0; c < ctx.cores; ++c) {
    const std::vector<int> members = RingOf(groups, ctx.ring, c);
    if (members.size() < 2) return {};  // a lone replica would need a copy: not handled here
    collectives::RingAllReduceSpec spec = SpecFor(members, valid, reduce, tag, ctx, op);
    spec.pieces = pieces;
    const auto pos = std::find(members.begin(), members.end(), c) - members.begin();
    programs.push_back(collectives::TakesButterfly(static_cast<int>(members.size()), valid)
                           ? collectives::ButterflyAllReduceProgram(spec, static_cast<int>(pos))
                           : collectives::RingAllReduceProgram(spec, static_cast<int>(pos)));
  }
  op.kind = KernelKind::kCollective;
  op.hbm_bytes = 2 * valid;
  op.exact = true;
  return programs;
}

// An exact all-reduce of f32 operands, each its own buffer (a tuple all-reduce, or one
// operand with padding or a separate result): one ring over the operands back to back.
// Empty for operands that are not f32 arrays and for rings of one core.
std::vector<std::string> CombinedAllReduce(const HloInstruction& instr,
                                           const CollectiveContext& ctx,
                                           const std::vector<std::vector<int>>& groups,
                                           collectives::ReduceOp reduce, LoweredOp& op) {
  std::vector<collectives::RingPiece> pieces;
  uint64_t valid = 0;
  for (size_t i = 0; i < instr.operand_count(); ++i) {
    const HloInstruction* in = instr.operand(i);
    if (in->shape().type != hlo::PrimitiveType::kF32 || !in->shape().IsArray()) return {};
    const uint64_t bytes = ByteSize(in->shape());
    if (bytes == 0) continue;
    pieces.push_back({ctx.address(in), bytes, ElementAddress(instr, static_cast<int64_t>(i), ctx)});
    valid += bytes;
  }
  if (pieces.empty()) return {};
  auto programs = PiecesAllReduce(pieces, valid, groups, ctx, reduce, instr.name(), op);
  if (!programs.empty()) op.note.clear();
  return programs;
}

}  // namespace

std::vector<std::string> EmitAllReduce(const HloInstruction& instr, const OpContext& c,
                                       LoweredOp& op) {
  const CollectiveStart st = BeginCollective(instr, c, op);
  if (auto lone = LoneMembers(instr, st, op)) return *lone;
  const auto& [ctx, groups] = st;
  const uint64_t in = ctx.address(instr.operand(0)), out = ctx.address(&instr);
  uint64_t bytes = 0;
  for (const HloInstruction* o : instr.operands()) bytes += ByteSize(o->shape());
  auto programs = AllReduce(
      groups, in, bytes, instr.name(), ctx,
      IsMaxReduction(instr) ? collectives::ReduceOp::kMax : collectives::ReduceOp::kSum, op);
  op.exact = instr.operand_count() == 1 && op.note.empty() &&
             instr.shape().type == hlo::PrimitiveType::kF32 && in == out;
  if (!op.exact) {  // several operands, padding or a separate result: one combined ring
    LoweredOp exact = op;
    exact.hbm_bytes = 0;
    auto combined = CombinedAllReduce(
        instr, ctx, groups,
        IsMaxReduction(instr) ? collectives::ReduceOp::kMax : collectives::ReduceOp::kSum, exact);
    if (!combined.empty()) return op = exact, combined;
  }
  return programs;
}

}  // namespace tpusim::lowering
