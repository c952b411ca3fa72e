// HLO data movement on the strided-DMA kernel of move_kernel.h: copy, transpose, reverse,
// slice, broadcast, concatenate and pad (non-negative edges) as exact HBM -> HBM moves.
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/op_kernels.h"

namespace tpusim::lowering {

// The kernel, with `op` filled (kind, bytes, exact); empty when the op is not one it takes
// (another opcode, elements that are not 4 or 2-byte aligned).
std::string MoveOpKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

// replica-id or partition-id: each core's program fills the u32[] result with its index
// (`per_device`: a module of one device per core, core k being global device k = replica x
// `partitions` + partition) or 0 (a single-device module every core runs whole, whose one
// replica and partition are 0). One program per core.
std::vector<std::string> DeviceIndexKernels(const hlo::HloInstruction& instr, const OpContext& c,
                                            bool per_device, int64_t partitions, LoweredOp& op);

}  // namespace tpusim::lowering
