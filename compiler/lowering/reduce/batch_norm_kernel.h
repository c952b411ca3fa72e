// Batch normalization (training, inference, grad) over the last dimension of f32 values,
// exactly: the input is a [rows, features] matrix and each op is a short sequence of
// passes. Feature counts that divide 1024 or are a multiple of it stream flat
// (batch_norm_flat.h), where x, dy and the result may also be bf16 (statistics and
// per-feature vectors stay f32); others run on the tiled VPU kernel (tile_kernel.h): column
// sums for the statistics, [1, features] passes for per-feature factors, a normalising pass.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel for a batch-norm-training, -inference or -grad `instr`, with `op` filled
// (exact), or empty when it does not take it: a feature dimension other than the last,
// types it does not take, or, where the passes are tiled (they read the statistics back), a
// statistic nothing reads (it has no buffer).
std::string BatchNormKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

// The kernel takes `bn`'s shape and element types (the passes ask through the target
// description, target/target_description.h).
bool BatchNormOnExactKernel(const hlo::HloInstruction& bn);

// Where element k of a tuple-valued op's result lives: the buffer of the get-tuple-element
// that reads it (element 0: the op's own buffer when none does); none when nothing reads it.
std::optional<uint64_t> TupleElementAddress(const hlo::HloInstruction& instr, int64_t k,
                                            const OpContext& ctx);

}  // namespace tpusim::lowering
