// A slice or dynamic-slice along the data-parallel batch under a split (data_parallel.h): each core
// holds rows [c R, (c + 1) R) of the operand (R = batch / cores) and the slice's window may
// span several cores' rows. Each core writes the window's rows it holds into a zero-filled
// result; the `.data-parallel-all-reduce` after it ORs the cores' results (disjoint parts,
// zeros elsewhere), so every core ends with the whole slice, bit for bit.
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/op_kernels.h"

namespace tpusim::lowering {

// Whether `instr` is such a slice: a slice (stride 1) or dynamic-slice (an s32 scalar start)
// whose operand's leading dimension is the batch `split`, the only dimension it slices, of
// 32-bit words per row (the fill and the OR are word-wise).
bool IsBatchSlice(const hlo::HloInstruction& instr, int64_t split);

// One program per core, with `op` filled; empty when `instr` is not a batch slice.
std::vector<std::string> BatchSliceKernels(const hlo::HloInstruction& instr, const OpContext& ctx,
                                           LoweredOp& op);

}  // namespace tpusim::lowering
