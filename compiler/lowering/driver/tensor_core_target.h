// The TensorCore code generator as the passes see it (target/target_description.h).
#pragma once

#include "compiler/target/target_description.h"

namespace tpusim::lowering {

// A convolution is exact when OnExactConvKernel (conv/conv_select.h) takes it at the default
// placement (two MXUs, v3; the lowering itself places it on the board's MXUs); a batch norm
// when BatchNormOnExactKernel (reduce/batch_norm_kernel.h) takes its types; bf16 values are
// read exactly when they are a whole number of vregs (vpu/vpu_stream.h).
const target::TargetDescription& TensorCoreTarget();

}  // namespace tpusim::lowering
