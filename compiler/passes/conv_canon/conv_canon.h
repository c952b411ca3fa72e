// conv-canonicalization: rewrites each convolution no exact MXU kernel takes
// (target/target_description.h) into convolutions they do take, plus data movement the move
// kernel computes exactly, with the same values up to f32 summation order:
//
//   weight gradient (f01b_i01o->01bf) with padding      -> pad(X), then the unpadded one
//   weight gradient with window dilation s              -> one stride-1 weight gradient per
//     (the forward stride)                                  stride phase of X (strided slices),
//                                                           taps padded into place, added
//   weight gradient with a bf16 result (as JAX's bf16  -> the same in f32 (the MXU
//     models ask)                                           accumulates in f32), then rounded
//                                                           to bf16 once: a convert
//   input gradient (b01f_01io/01oi->b01f) with input    -> one stride-1 convolution of dY per
//     dilation s (the forward stride)                       output phase with that phase's
//                                                           taps, phases interleaved into dX
//   forward convolution with window dilation d          -> one undilated convolution per
//     (atrous, stride 1)                                    output phase of a strided slice
//                                                           of X, phases interleaved into Y
//   forward convolution with feature groups             -> one convolution per group (or per
//     (01io kernel)                                         chunk of depthwise channels, the
//                                                           kernel expanded block-diagonally),
//                                                           concatenated along the features
//
// A convolution is rewritten only when every convolution of its rewrite runs on an exact
// kernel; anything else is left as it is. docs/compiler.md describes the rewrites.
#pragma once

#include "compiler/hlo/ir.h"
#include "compiler/passes/conv_canon/conv_canon_build.h"
#include "compiler/passes/pass.h"

namespace tpusim::passes {

// The value that replaces `conv`, built with `b`; nullptr when this rewrite does not apply
// (the form does not match or some part would not run on an exact kernel).
// A weight gradient with a bf16 result as the f32 one (when its kernel takes that) and a convert.
hlo::HloInstruction* RewriteNarrowWeightGrad(const hlo::HloInstruction& conv,
                                             ConvRewriteBuilder& b);
hlo::HloInstruction* RewriteWeightGrad(const hlo::HloInstruction& conv, ConvRewriteBuilder& b);
hlo::HloInstruction* RewriteInputGrad(const hlo::HloInstruction& conv, ConvRewriteBuilder& b);
hlo::HloInstruction* RewriteDilatedConv(const hlo::HloInstruction& conv, ConvRewriteBuilder& b);
hlo::HloInstruction* RewriteGroupedConv(const hlo::HloInstruction& conv, ConvRewriteBuilder& b);

class ConvCanonicalizationPass : public HloPass {
 public:
  // `target` says which convolutions the code generator computes exactly; it outlives the pass.
  explicit ConvCanonicalizationPass(const target::TargetDescription& target) : target_(target) {}
  std::string_view name() const override { return "conv-canonicalization"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription& target_;
};

}  // namespace tpusim::passes
