// The gradient of max pooling (select-and-scatter with select = GE, scatter = add over the
// spatial dimensions of NHWC f32 values) on the VPU. Per chunk of source lines, the window
// taps arrive as in pool_kernel.h (a tap on padding reads -inf), the VPU picks each
// window's first maximum in window order as the evaluator does and writes each tap's
// contribution (the source value where the tap was picked, else 0). The result is then
// built phase by phase: result positions (stride * i + a, stride * j + b) receive from the
// taps congruent to (a, b), each tap's contributions shifted by whole lines and pixels
// (aligned VMEM loads), summed in the evaluator's window order, and a strided DMA writes
// the phase into place. Chunks are double-buffered and images a scalar loop.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel for a select-and-scatter `instr`, with `op` filled (exact), or empty when it
// does not take it: other computations or layouts, low padding, dilation, features not a
// multiple of 64 (shifted loads stay 256-byte aligned) or over 1024, strides that leave result
// lines no source line reaches, or buffers beyond its bounds.
std::string MaxPoolGradKernel(const hlo::HloInstruction& instr, const OpContext& ctx,
                              LoweredOp& op);

}  // namespace tpusim::lowering
