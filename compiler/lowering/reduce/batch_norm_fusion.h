// batch-norm-training fused with the elementwise consumer of its normalized output (the
// multi-output fusion the batch-norm-epilogue-fusion pass builds, passes/bn_epilogue.h): the
// flat kernel's normalizing pass computes the consumer per vreg (ReLU, a residual add, a
// convert) and stores only its result, so the normalized value never goes to HBM.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// `fusion` is such a fusion and the flat batch-norm kernel computes it exactly: a fused
// computation of parameters, one batch-norm-training (feature index last, flat shape), the
// epilogue (elementwise ops and scalar broadcasts over its element 0, at most one more
// parameter of x's shape and layout, scalar constants) and the root tuple(epilogue, mean,
// var).
bool BatchNormFusionOnExactKernel(const hlo::HloInstruction& fusion);

// The kernel for such a fusion, with `op` filled, or empty when it does not take it.
std::string BatchNormFusionKernel(const hlo::HloInstruction& fusion, const OpContext& ctx,
                                  LoweredOp& op);

}  // namespace tpusim::lowering
