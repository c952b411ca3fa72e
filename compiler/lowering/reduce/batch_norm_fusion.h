// Batch norm fused with its elementwise neighbours (the fusions the batch-norm-fusion pass
// builds, passes/fusion/bn_fusion.h), on the flat kernel (batch_norm_flat.h):
//  - batch-norm-training with the consumer of its normalized output: the normalizing pass
//    computes the consumer per vreg (ReLU, a residual add) and stores only its result;
//  - batch-norm-grad with the producer of its dy: both passes compute dy per vreg from the
//    producer's matrices (ReLU's gradient from y and g) instead of reading it.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// `fusion` is such a fusion and the flat batch-norm kernel computes it exactly: a fused
// computation of parameters, one batch-norm-training (feature index last, flat shape), the
// epilogue (elementwise ops and scalar broadcasts over its element 0, at most one more
// parameter of x's shape and layout, scalar constants) and the root tuple(epilogue, mean,
// var); or a root batch-norm-grad of parameters whose dy is such an expression over at most
// two parameters of x's shape and layout.
bool BatchNormFusionOnExactKernel(const hlo::HloInstruction& fusion);

// The kernel for such a fusion, with `op` filled, or empty when it does not take it.
std::string BatchNormFusionKernel(const hlo::HloInstruction& fusion, const OpContext& ctx,
                                  LoweredOp& op);

}  // namespace tpusim::lowering
