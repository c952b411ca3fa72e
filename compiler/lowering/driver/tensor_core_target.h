// The TensorCore code generator as the passes see it (target/target_description.h).
#pragma once

#include "compiler/target/target_description.h"

namespace tpusim::lowering {

// A convolution is exact when OnExactConvKernel (conv/conv_select.h) takes it at the default
// placement (two MXUs, v3; the lowering itself places it on the board's MXUs); a batch norm
// when BatchNormOnExactKernel (reduce/batch_norm_kernel.h) takes its types.
const target::TargetDescription& TensorCoreTarget();

}  // namespace tpusim::lowering
