// Scatter as the embedding gradient XLA emits: rows of updates added into a 2-D table by s32
// indices (update_window_dims = {last}, inserted_window_dims = {0},
// scatter_dims_to_operand_dims = {0}, to_apply = add). An index-driven kernel in the spirit
// of gather_kernel.h: the operand is copied into the result, then the updates go in groups
// of up to 128 rows. Each group's indices come into SMEM by DMA (dma.hs) and its update rows
// into VMEM by one strided DMA; the sequencer reads each index, skips it outside the table
// (as XLA does), and copies the table row into VMEM unless an earlier row of the group has
// the same index (found through a small hash table in SMEM): that row then adds onto the
// earlier row's sum, so duplicates accumulate in update order, as the evaluator adds them.
// The VPU adds row by row; the last row of each index goes back to HBM. Reads and writes of
// a group are pipelined over the DMA engines; groups follow each other.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel with `op` filled; empty when the scatter is not an f32 row scatter-add of that
// form.
std::string ScatterKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
