// The data-movement emitters (emitters.h): each op on its exact DMA kernel when it takes the
// op, else the timing of one copy of the bytes it moves.
#include <algorithm>

#include "compiler/lowering/data/dynamic_slice_kernel.h"
#include "compiler/lowering/data/gather_kernel.h"
#include "compiler/lowering/data/move_ops.h"
#include "compiler/lowering/data/scatter_kernel.h"
#include "compiler/lowering/driver/emitters.h"
#include "compiler/lowering/vpu/vpu_stream.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;

// Timing only: `moved` (the result, or an update's operand) copied HBM -> HBM from operand
// 0's buffer into the result's, at least 512 bytes.
std::string DmaCopyOp(const HloInstruction& instr, const HloInstruction& moved, const OpContext& c,
                      LoweredOp& op) {
  const uint64_t bytes = std::max<uint64_t>(ByteSize(moved.shape()), 512);
  op.kind = KernelKind::kDma;
  op.hbm_bytes = 2 * bytes;
  return DmaCopyKernel(c.address(instr.operand(0)), c.address(&instr), bytes, instr.name());
}

}  // namespace

// copy, transpose, reverse, slice, concatenate, pad.
std::string EmitMove(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string m = MoveOpKernel(instr, c, op); !m.empty()) return m;
  return DmaCopyOp(instr, instr, c, op);
}

std::string EmitGather(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string g = GatherKernel(instr, c, op); !g.empty()) return g;
  return DmaCopyOp(instr, instr, c, op);
}

std::string EmitScatter(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string s = ScatterKernel(instr, c, op); !s.empty()) return s;
  return DmaCopyOp(instr, *instr.operand(2), c, op);  // the updates
}

// dynamic-slice and dynamic-update-slice.
std::string EmitDynamicSlice(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string d = DynamicSliceKernel(instr, c, op); !d.empty()) return d;
  const bool update = instr.opcode() == hlo::Opcode::kDynamicUpdateSlice;
  return DmaCopyOp(instr, update ? *instr.operand(1) : instr, c, op);
}

std::string EmitDmaCopy(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  return DmaCopyOp(instr, instr, c, op);
}

}  // namespace tpusim::lowering
