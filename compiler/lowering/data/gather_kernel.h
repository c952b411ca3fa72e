// An embedding lookup: gather of whole rows of a 2-D table by s32 indices (offset_dims =
// {rank of indices}, collapsed_slice_dims = {0}, start_index_map = {0}, slice_sizes =
// {1, row}). The indices come into SMEM by DMA in batches (dma.hs), the sequencer loads
// each one, clamps it to the table as XLA does and copies that row HBM -> HBM.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel with `op` filled; empty when the gather is not an embedding lookup of 4-byte
// elements.
std::string GatherKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
