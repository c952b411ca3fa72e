// Fusions over [..., features] matrices (f32 or bf16) and f32[features] vectors broadcast
// along the last dimension, with scalar constants: XLA's reduction input fusion for
// per-feature sums (the root an add reduce over every dimension but the last, or a tuple of
// two: a multi-output fusion), and loop fusions whose root is elementwise over the matrices'
// shape. A batch norm the partitioner expands (its statistics all-reduced between the
// devices) or a framework wrote out, as flax does, sums and normalizes so. One feature
// stream (batch_norm_flat.h: ColumnSums, ColumnMap) reads each matrix once, computes the
// values per vreg and accumulates them in f32, or stores the result (f32 or bf16).
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// Whether the kernel takes `fusion` and computes its values: at most four matrices, six
// vectors, two sums (or one result matrix), every element op with an exact VPU form, and features
// that stream flat (FlatBatchNorm::Takes).
bool FeatureFusionOnExactKernel(const hlo::HloInstruction& fusion);

// The kernel with `op` filled (exact), or empty when it does not take `instr`.
std::string FeatureFusionKernel(const hlo::HloInstruction& instr, const OpContext& ctx,
                                LoweredOp& op);

}  // namespace tpusim::lowering
