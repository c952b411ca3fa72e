// Batch normalization (training, inference, grad) over the last dimension of f32 values,
// exactly: the input is a [rows, features] matrix and each op is a short sequence of
// passes. Feature counts that divide 1024 or are a multiple of it stream flat
// (batch_norm_flat.h); others run on the tiled VPU kernel (tile_kernel.h): column sums for
// the statistics, [1, features] passes for per-feature factors, a normalising pass.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel for a batch-norm-training, -inference or -grad `instr`, with `op` filled
// (exact), or empty when it does not take it: a feature dimension other than the last,
// non-f32 values, or a tuple element nothing reads (it has no buffer to hold the
// statistics).
std::string BatchNormKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
