// Batch normalization (training, inference, grad) over the last dimension of f32 values,
// exactly: the input is a [rows, features] matrix and each op is a short sequence of
// passes. Feature counts that divide 1024 or are a multiple of it stream flat
// (batch_norm_flat.h); others run on the tiled VPU kernel (tile_kernel.h): column sums for
// the statistics, [1, features] passes for per-feature factors, a normalising pass.
#pragma once

#include <optional>
#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/op_kernels.h"

namespace tpusim::lowering {

// The kernel for a batch-norm-training, -inference or -grad `instr`, with `op` filled
// (exact), or empty when it does not take it: a feature dimension other than the last,
// non-f32 values, a data-parallel split of the statistics, or a tuple element nothing
// reads (it has no buffer to hold the statistics).
std::string BatchNormKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

// batch-norm-training of x split over the cores along its leading dimension (ctx.split):
// the statistics are over the whole batch, so each core's sums of x and x^2 ([2, features]
// f32, in the first bytes of y's buffer) are all-reduced between the two kernels. A
// batch-norm-grad likewise all-reduces sum(dy) and sum(dy * (x - mean)) (in dx's buffer);
// its dgamma and dbeta come out whole.
struct SplitBatchNorm {
  std::string partial;  // each core's sums into `sums`
  std::string finish;   // from the reduced sums: the statistics (when read) and y
  uint64_t sums = 0;
  hlo::Shape sums_shape;  // f32[2, features]
};

// The kernels with `op` filled (exact), or nullopt when the op is not such a training
// step or its values do not stream flat (batch_norm_flat.h).
std::optional<SplitBatchNorm> SplitBatchNormKernels(const hlo::HloInstruction& instr,
                                                    const OpContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
