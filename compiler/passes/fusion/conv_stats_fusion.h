// Convolution statistics fusion: the batch-norm statistics of a convolution's output are
// computed as the convolution drains, not in a pass of their own over its result.
//
// For a batch-norm fusion (batch-norm-fusion's kOutput fusion around batch-norm-training)
// whose x is a convolution with a bf16 result:
//  - the convolution becomes a multi-output fusion (kind=kOutput) computing
//    tuple(conv, sum(f32(conv)), sum(f32(conv)^2)), reductions over every dimension but the
//    feature one;
//  - the batch norm inside the fusion is expanded from those sums as XLA's BatchNormExpander
//    writes it (openxla/xla `xla/service/batchnorm_expander.cc`): mean = sum / N,
//    var = max(sum of squares / N - mean^2, 0), and the normalized value is
//    batch-norm-inference(x, scale, offset, mean, var); the fusion outputs the same mean
//    and var as before.
// This is XLA's multi-output fusion of a convolution with reductions of its output (openxla/xla
// `xla/service/multi_output_fusion.h`), what lets XLA's TPU backend read each convolution's
// result once per training step in the forward pass instead of twice. Both fusions are kept
// only where the target runs each on one exact kernel (TargetDescription::ExactConvolutionFusion
// and ExactBatchNormFusion). Runs after batch-norm-fusion.
//
// A batch norm the partitioner expanded has no batch-norm-training left: its sums are a
// multi-output fusion of their own (multi-output-fusion's tuple(sum(f32(x)),
// sum(f32(x) * f32(x)))). When x is such a convolution, the convolution takes the sums as
// above and the sums' readers read them from it (XLA's producer-consumer multi-output fusion).
#pragma once

#include "compiler/passes/pass.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

class ConvStatisticsFusionPass : public HloPass {
 public:
  explicit ConvStatisticsFusionPass(const target::TargetDescription& target) : target_(target) {}
  std::string_view name() const override { return "convolution-statistics-fusion"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription& target_;
};

}  // namespace tpusim::passes
