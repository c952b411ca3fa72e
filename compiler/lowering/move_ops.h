// HLO data movement on the strided-DMA kernel of move_kernel.h: copy, transpose, reverse,
// slice, broadcast, concatenate and pad (non-negative edges) as exact HBM -> HBM moves.
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/op_kernels.h"

namespace tpusim::lowering {

// The kernel, with `op` filled (kind, bytes, exact); empty when the op is not one it takes
// (another opcode, a data-parallel split, elements that are not 4 or 2-byte aligned).
std::string MoveOpKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

// replica-id or partition-id: each core's program fills the u32[] result with its index
// (`per_replica`: a module of one replica per core) or 0 (one partition; a data-parallel
// split of a single-replica module, whose one replica is 0). One program per core.
std::vector<std::string> DeviceIndexKernels(const hlo::HloInstruction& instr, const OpContext& c,
                                            bool per_replica, LoweredOp& op);

}  // namespace tpusim::lowering
