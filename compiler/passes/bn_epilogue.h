// Batch-norm epilogue fusion: a batch-norm-training whose normalized output (element 0) has
// one user, an elementwise op or loop fusion (ReLU, a residual add and ReLU, a convert),
// becomes one multi-output fusion (kind=kOutput) computing tuple(that user's result, mean,
// var), so the normalized activations are never written to HBM and read back.
//
// This is the HBM traffic XLA's TPU pipeline reaches by other means: its BatchNormExpander
// (openxla/xla `xla/service/batchnorm_expander.cc`) rewrites batch norm into reductions and an
// elementwise normalize, and loop fusion puts the normalize and its elementwise consumers
// into one kernel. The fusion is kept only where the target runs it on one exact kernel
// (TargetDescription::ExactBatchNormFusion); runs after elementwise-fusion, so the consumer
// is already one fusion.
#pragma once

#include "compiler/passes/pass.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

class BatchNormEpilogueFusionPass : public HloPass {
 public:
  explicit BatchNormEpilogueFusionPass(const target::TargetDescription& target) : target_(target) {}
  std::string_view name() const override { return "batch-norm-epilogue-fusion"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription& target_;
};

}  // namespace tpusim::passes
