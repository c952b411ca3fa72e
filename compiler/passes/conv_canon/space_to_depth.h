// space-to-depth: a strided convolution over few input channels (the RGB stem: 7x7, stride 2,
// 3 channels) runs as a stride-1 convolution over the input's s x s blocks folded into the
// channels, as Google's MLPerf ResNet-50 on TPU does (docs/fidelity.md, mechanism 5):
//
//   forward   Y = conv(X, W, k x k, stride s, pad p)
//          -> Y = conv(S(pad(X)), S'(W), ceil(k/s) x ceil(k/s), stride 1)
//   weight    dW = conv(X, dY, pad p, rhs_dilate s)                 (f01b_i01o->01bf)
//   gradient -> dW = slice(D(conv(S(pad(X)), dY, stride 1)))
//
// where S puts pixel (s a + i, s b + j, c) of the padded image at (a, b, (i, j, c)), S' the
// kernel's taps the same way (zero taps beyond k), D undoes S' on the gradient. S is a pad,
// a bitcast, a transpose and a bitcast, built once per image and padding. The folded kernel
// copies ceil(k/s)^2 taps of s^2 c channels per band instead of k^2 taps of c channels: the
// stem's 49 copies become 16. A convolution is rewritten only when the folded one runs on an
// exact kernel and s^2 c stays below the folding limit (lowering/conv/conv_plan.h).
#pragma once

#include "compiler/hlo/ir.h"
#include "compiler/passes/pass.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

class SpaceToDepthPass : public HloPass {
 public:
  // `target` says which convolutions run on an exact kernel; it outlives the pass.
  explicit SpaceToDepthPass(const target::TargetDescription& target) : target_(target) {}
  std::string_view name() const override { return "space-to-depth"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription& target_;
};

}  // namespace tpusim::passes
