// Batch-norm fusion: batch norm and the elementwise work next to it in one kernel.
//  - Epilogue: a batch-norm-training whose normalized output (element 0) has one user, an
//    elementwise op or loop fusion (ReLU, a residual add and ReLU, a convert), becomes one
//    multi-output fusion (kind=kOutput) computing tuple(that user's result, mean, var), so
//    the normalized activations are never written to HBM and read back.
//  - Producer: a batch-norm-grad whose dy is an elementwise op or loop fusion read by
//    nothing else (ReLU's gradient, select(y > 0, g, 0)) takes it in (kind=kInput), so dy is
//    computed in both of the kernel's passes instead of written and read twice.
//  - Duplicated normalize: when that producer reads the ReLU a training batch norm's fusion
//    computes from the same x, gamma, mean and var (ReLU's gradient of a layer whose output
//    also feeds the next convolution, so it stays in HBM), the gradient fusion recomputes it
//    from x, which its passes read anyway: batch-norm-inference(x, gamma, beta, mean, var)
//    and the ReLU inside the fusion, beta a new operand, instead of reading the ReLU back
//    (XLA's InstructionFusion duplicating a cheap producer into a consumer while it stays for
//    its other users, `may_duplicate`: openxla/xla `xla/service/instruction_fusion.cc`).
//
// This is the HBM traffic XLA's TPU pipeline reaches by other means: its BatchNormExpander
// (openxla/xla `xla/service/batchnorm_expander.cc`) rewrites batch norm into reductions and
// elementwise ops, and fusion puts the normalize and its consumers into one loop fusion and
// the gradient's producers into the reductions and the dx loop. A fusion is kept only where
// the target runs it on one exact kernel (TargetDescription::ExactBatchNormFusion); runs
// after elementwise-fusion, so the neighbours are already one fusion each.
#pragma once

#include "compiler/passes/pass.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

class BatchNormFusionPass : public HloPass {
 public:
  explicit BatchNormFusionPass(const target::TargetDescription& target) : target_(target) {}
  std::string_view name() const override { return "batch-norm-fusion"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription& target_;
};

}  // namespace tpusim::passes
