// The collective emitters (emitters.h) but the all-reduce's (all_reduce_emitter.cc): each
// collective of a per-device module as one ring program per core (compiler/collectives/), on
// the flags reserved for them (asm_util.h), padded to the ring programs' granules; replica i
// runs on core i.
#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>
#include <utility>

#include "compiler/assembly/asm_util.h"
#include "compiler/collectives/all_to_all.h"
#include "compiler/collectives/butterfly_allreduce.h"
#include "compiler/collectives/ring_allreduce.h"
#include "compiler/collectives/ring_collectives.h"
#include "compiler/collectives/ring_emitter.h"
#include "compiler/lowering/collective/collective_common.h"
#include "compiler/lowering/data/move_kernel.h"
#include "compiler/lowering/driver/emitters.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

constexpr uint64_t kVreg = 4096;

// The rows an all-gather's part is made of: the product of the operand's dimensions before
// the gathered one (each row lands next to the other members' rows of the same index).
uint64_t GatherRows(const HloInstruction& instr) {
  const std::vector<int64_t>* dims = instr.dimensions();
  const hlo::Shape& in = instr.operand(0)->shape();
  uint64_t rows = 1;
  if (dims && !dims->empty())
    for (int64_t d = 0; d < (*dims)[0] && d < static_cast<int64_t>(in.dims.size()); ++d)
      rows *= static_cast<uint64_t>(in.dims[d]);
  return rows;
}

constexpr uint64_t kRingMax = collectives::kRingCollectiveMaxBytes;

// An all-gather larger than the ring stages in VMEM, as rounds that each gather a piece of
// every part, one after the other between drain barriers: whole rows of the part when a row
// of every member fits, else (a part of one row) a column piece of it.
std::vector<std::string> AllGatherRounds(const collectives::RingCollectiveSpec& whole, size_t n,
                                         const CollectiveContext& ctx) {
  const uint64_t part = whole.input_bytes, rows = whole.part_rows, row = part / rows;
  std::vector<collectives::RingCollectiveSpec> rounds;
  if (row * n <= kRingMax) {
    const uint64_t per = kRingMax / (row * n);
    for (uint64_t a = 0; a < rows; a += per) {
      collectives::RingCollectiveSpec r = whole;
      r.part_rows = std::min(per, rows - a);
      r.input_bytes = r.part_rows * row;
      r.input_address = whole.input_address + a * row;
      r.output_address = whole.output_address + a * row * n;
      r.member_stride = row;
      rounds.push_back(r);
    }
  } else if (rows == 1) {
    const uint64_t piece = kRingMax / n / 4096 * 4096;
    for (uint64_t a = 0; a < part; a += piece) {
      collectives::RingCollectiveSpec r = whole;
      r.input_bytes = std::min(piece, part - a);
      r.input_address = whole.input_address + a;
      r.output_address = whole.output_address + a;
      r.member_stride = part;
      rounds.push_back(r);
    }
  } else {
    throw std::invalid_argument("all-gather rows of " + std::to_string(row) +
                                " bytes exceed the ring's VMEM staging for " + std::to_string(n) +
                                " members");
  }
  std::vector<std::string> programs(static_cast<size_t>(ctx.cores));
  for (size_t k = 0; k < rounds.size(); ++k) {
    for (int c = 0; c < ctx.cores; ++c) {
      if (k > 0) programs[c] += assembly::DrainBarrier(ctx.mxus);
      programs[c] += assembly::ScopeKernel(collectives::AllGatherProgram(rounds[k], c),
                                           "round" + std::to_string(k) + "_");
    }
  }
  return programs;
}

// A reduce-scatter larger than the ring stages in VMEM, as rounds that each reduce a piece
// of every part (whole vregs), between drain barriers.
std::vector<std::string> ReduceScatterRounds(const collectives::RingCollectiveSpec& whole, size_t n,
                                             const CollectiveContext& ctx) {
  const uint64_t part = whole.input_bytes / n;
  const uint64_t piece = kRingMax / n / kVreg * kVreg;
  std::vector<std::string> programs(static_cast<size_t>(ctx.cores));
  int k = 0;
  for (uint64_t a = 0; a < part; a += piece, ++k) {
    collectives::RingCollectiveSpec r = whole;
    r.input_bytes = std::min(piece, part - a) * n;
    r.input_address = whole.input_address + a;
    r.output_address = whole.output_address + a;
    r.member_stride = part;
    for (int c = 0; c < ctx.cores; ++c) {
      if (k > 0) programs[c] += assembly::DrainBarrier(ctx.mxus);
      programs[c] += assembly::ScopeKernel(collectives::ReduceScatterProgram(r, c),
                                           "round" + std::to_string(k) + "_");
    }
  }
  return programs;
}

// all-to-all: core c at position p of its group sends chunk j (its operand j in the tuple
// form, else block j of its operand along the split dimension) to member j, where it lands
// at slot p of the member's result. Exact when each chunk is contiguous: the split
// dimension has only dimensions of size 1 before it (else the same bytes, timing-only).
std::vector<std::string> AllToAllKernels(const HloInstruction& instr, const CollectiveContext& ctx,
                                         const std::vector<std::vector<int>>& groups,
                                         LoweredOp& op) {
  const bool tuple = instr.operand_count() > 1 || !instr.dimensions();
  const hlo::Shape& in = instr.operand(0)->shape();
  uint64_t chunk = 0;
  op.exact = true;
  std::vector<std::string> programs;
  for (int c = 0; c < ctx.cores; ++c) {
    std::vector<int> group;
    for (const auto& g : groups)
      if (std::find(g.begin(), g.end(), c) != g.end()) group = g;
    const size_t n = group.size();
    const size_t p = std::find(group.begin(), group.end(), c) - group.begin();
    std::vector<collectives::ChunkSend> sends;
    int incoming = 0;
    if (tuple) {
      if (instr.operand_count() != n)
        throw std::invalid_argument("all-to-all: the tuple form needs one operand per member");
      chunk = ByteSize(in);
      // Element p of every member's result (the same address on every core) receives this
      // core's operand for it; an element nothing reads is neither sent nor awaited.
      const std::optional<uint64_t> dest = ElementAddress(instr, static_cast<int64_t>(p), ctx);
      for (size_t j = 0; j < n; ++j) {
        if (dest) sends.push_back({group[j], ctx.address(instr.operand(j)), *dest});
        if (ElementAddress(instr, static_cast<int64_t>(j), ctx)) ++incoming;
      }
    } else {
      const int64_t d = (*instr.dimensions())[0];
      int64_t before = 1;
      for (int64_t k = 0; k < d; ++k) before *= in.dims[k];
      op.exact = op.exact && before == 1;
      chunk = ByteSize(in) / n;
      const uint64_t src = ctx.address(instr.operand(0)), out = ctx.address(&instr);
      for (size_t j = 0; j < n; ++j) sends.push_back({group[j], src + j * chunk, out + p * chunk});
      incoming = static_cast<int>(n);
    }
    programs.push_back(collectives::AllToAllProgram(sends, chunk, incoming, c, instr.name(),
                                                    assembly::kCollectiveFlagBase, ctx.mailbox));
  }
  if (!op.exact) op.note = "chunks strided along the split dimension: timed by their bytes";
  op.hbm_bytes = 2 * ByteSize(instr.shape().IsTuple() ? in : instr.shape());
  return programs;
}

// The done that reads `start`, or null.
const HloInstruction* DoneOf(const HloInstruction& start) {
  for (const auto& u : start.parent()->instructions())
    if (hlo::IsAsyncCollectiveDone(u->opcode()) && u->operand(0) == &start) return u.get();
  return nullptr;
}

// all-gather (`gather`) or reduce-scatter over rings of the groups; their starts on the
// collective stream.
std::vector<std::string> RingCollective(const HloInstruction& instr, const OpContext& c,
                                        LoweredOp& op, bool gather) {
  const CollectiveStart st = BeginCollective(instr, c, op);
  if (auto lone = LoneMembers(instr, st, op)) return *lone;
  const auto& [ctx, groups] = st;
  const uint64_t in_bytes = ByteSize(instr.operand(0)->shape());
  // A start's result is element 1 of its tuple: where its done lives.
  const bool start = hlo::IsAsyncCollectiveStart(instr.opcode());
  const HloInstruction* result = start ? DoneOf(instr) : &instr;
  if (!result) throw std::invalid_argument(instr.name() + ": a start without its done");
  const uint64_t out_bytes = ByteSize(result->shape());
  const uint64_t in = ctx.address(instr.operand(0)), out = ctx.address(result);
  collectives::RingCollectiveSpec spec;
  for (const auto& g : groups) spec.replica_groups.emplace_back(g.begin(), g.end());
  spec.board_ring = ctx.ring;
  spec.input_address = in, spec.output_address = out;
  spec.input_bytes = (in_bytes + kVreg - 1) / kVreg * kVreg;
  if (gather) {
    // Any element type: the ring copies the parts as bytes, rows of 4-byte multiples.
    spec.part_rows = GatherRows(instr);
    if (in_bytes % (4 * spec.part_rows) == 0) spec.input_bytes = in_bytes;
    op.exact = spec.input_bytes == in_bytes && in_bytes > 0 && instr.operand_count() == 1;
    if (!op.exact) op.note = "parts padded to 4 KiB";
    if (!op.exact) spec.part_rows = 1;
  } else {
    const uint64_t n = groups[0].size(), part = (in_bytes / n + kVreg - 1) / kVreg * kVreg;
    spec.input_bytes = part * n;
    op.exact = spec.input_bytes == in_bytes && result->shape().type == hlo::PrimitiveType::kF32;
    if (!op.exact) op.note = "parts padded to 4 KiB";
    // Scattered along a dimension after the leading ones: member g's part is row g of n in
    // each of the `rows` rows of the dimensions before it, gathered by strided copies (the
    // reduced part goes out as its rows one after the other, the result's order). A part too
    // large for one ring keeps the contiguous model's timing only.
    const uint64_t rows = GatherRows(instr);
    if (rows > 1) {
      spec.part_rows = rows;
      if (op.exact && (part % rows || spec.input_bytes > kRingMax)) {
        op.exact = false;
        op.note = "parts strided along the scattered dimension: timed as contiguous";
      }
      if (!op.exact) spec.part_rows = 1;
    }
  }
  spec.op = IsMaxReduction(instr) ? collectives::ReduceOp::kMax : collectives::ReduceOp::kSum;
  spec.tag = instr.name();
  spec.flag_base = assembly::kCollectiveFlagBase;
  spec.mailbox = ctx.mailbox;
  op.hbm_bytes = in_bytes + out_bytes;
  if (start) {
    // Beside the kernels: at the top of VMEM, the staged parts and the gathered round, or the
    // round's parts and its receive slots.
    const uint64_t round =
        std::min(gather ? groups[0].size() * spec.input_bytes : spec.input_bytes, kRingMax);
    spec.vmem_base = collectives::kCoreVmemBytes - 2 * ((round + kVreg - 1) / kVreg * kVreg);
    op.collective_vmem_base = static_cast<int64_t>(spec.vmem_base);
  }
  if (gather && op.exact && groups[0].size() * spec.input_bytes > kRingMax)
    return AllGatherRounds(spec, groups[0].size(), ctx);
  if (!gather && spec.input_bytes > kRingMax)
    return ReduceScatterRounds(spec, groups[0].size(), ctx);
  std::vector<std::string> programs;
  for (int core = 0; core < ctx.cores; ++core)
    programs.push_back(gather ? collectives::AllGatherProgram(spec, core)
                              : collectives::ReduceScatterProgram(spec, core));
  return programs;
}

}  // namespace

std::vector<std::string> EmitAllGather(const HloInstruction& instr, const OpContext& c,
                                       LoweredOp& op) {
  return RingCollective(instr, c, op, /*gather=*/true);
}

std::vector<std::string> EmitReduceScatter(const HloInstruction& instr, const OpContext& c,
                                           LoweredOp& op) {
  return RingCollective(instr, c, op, /*gather=*/false);
}

std::vector<std::string> EmitCollectivePermute(const HloInstruction& instr, const OpContext& c,
                                               LoweredOp& op) {
  const auto [ctx, groups] = BeginCollective(instr, c, op);
  const uint64_t in_bytes = ByteSize(instr.operand(0)->shape());
  const uint64_t in = ctx.address(instr.operand(0)), out = ctx.address(&instr);
  std::vector<std::pair<int, int>> pairs;
  if (const hlo::PairList* p = instr.source_target_pairs())
    for (const auto& [s, t] : *p) pairs.emplace_back(static_cast<int>(s), static_cast<int>(t));
  const uint64_t bytes = (in_bytes + 3) / 4 * 4;
  op.exact = bytes == in_bytes;
  op.hbm_bytes = 2 * bytes;
  std::vector<std::string> programs;
  for (int core = 0; core < ctx.cores; ++core)
    programs.push_back(collectives::CollectivePermuteProgram(
        pairs, in, out, bytes, core, instr.name(), assembly::kCollectiveFlagBase, ctx.mailbox));
  return programs;
}

std::vector<std::string> EmitAllToAll(const HloInstruction& instr, const OpContext& c,
                                      LoweredOp& op) {
  const CollectiveStart st = BeginCollective(instr, c, op);
  if (auto lone = LoneMembers(instr, st, op)) return *lone;
  return AllToAllKernels(instr, st.ctx, st.groups, op);
}

}  // namespace tpusim::lowering
