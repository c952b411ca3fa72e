// Contraction defusion: a fusion whose fused computation holds a dot or a convolution (XLA's
// kOutput and convolution fusions in optimized dumps) is replaced by its fused instructions,
// inlined into the caller. The contraction then runs on the MXU kernels, which compute its
// values, and the elementwise work around it is fused again by elementwise-fusion (a fused
// body on the VPU cannot hold a contraction). Timing stays as before: the epilogue was
// already a VPU pass over the MXU's result in HBM.
#pragma once

#include "compiler/passes/pass.h"

namespace tpusim::passes {

class ContractionDefusionPass : public HloPass {
 public:
  std::string_view name() const override { return "contraction-defusion"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;
};

}  // namespace tpusim::passes
