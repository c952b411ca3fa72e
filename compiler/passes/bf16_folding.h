// bf16-conversion-folding (XLA's BFloat16ConversionFolding, driven by the backend's
// FloatSupport): a convert between bf16 and f32 next to an op whose kernel takes mixed
// precision is folded into the op, so the value moves through HBM as bf16.
//
//   convert_bf16(convolution_f32(a, b))     -> convolution_bf16(a, b): the MXUs accumulate
//                                              in f32 and round once, as the convert did
//   batch-norm-*(convert_f32(x_bf16), ...)  -> batch-norm-*(x_bf16, ...): widening is exact
//   convert_bf16(get-tuple-element(bn, 0))  -> bn's result 0 is bf16 (statistics stay f32)
//   convert_bf16(pad|concatenate|bitcast(a)) -> the move of convert_bf16(a): the convert
//                                              moves onto the operands, where it may fold
//                                              again; the pass runs in rounds until none does
//
// (for batch-norm-grad also its dy, operand 4). A fold happens only when every user of the
// folded result is such a convert, the code generator computes the folded op exactly and
// reads the bf16 result exactly where it is used (target/target_description.h: the
// elementwise kernels read bf16 values of whole vregs); values do not change. The converts it
// bypasses are left to dce. docs/compiler.md, "bf16 end to end".
#pragma once

#include "compiler/passes/pass.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

class Bf16ConversionFoldingPass : public HloPass {
 public:
  // `target` outlives the pass.
  explicit Bf16ConversionFoldingPass(const target::TargetDescription& target) : target_(target) {}
  std::string_view name() const override { return "bf16-conversion-folding"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription& target_;
};

}  // namespace tpusim::passes
