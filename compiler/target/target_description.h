// What the passes must know of the code generator that runs after them. The code generator
// describes itself (lowering/driver/tensor_core_target.h: TensorCoreTarget()) and the pipeline
// (compiler/hlo_pipeline.h) hands the description to the passes that rewrite for it, so no
// pass includes the code generator: XLA's backend passes get their target the same way
// (a GPU compiler hands its conv rewriter the device's compute capability).
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::target {

class TargetDescription {
 public:
  virtual ~TargetDescription() = default;
  // `conv`, a convolution, lowers to a kernel that computes its values (not only its time):
  // the conv-canonicalization pass rewrites the ones for which this is false.
  virtual bool ExactConvolution(const hlo::HloInstruction& conv) const = 0;
  // `bn`, a batch-norm op, lowers to a kernel that computes its values with the element
  // types it has: the bf16 conversion folding leaves a batch norm mixed precision (bf16 x,
  // dy or result beside f32 statistics) only where this holds, as XLA asks its backend's
  // FloatSupport which ops take mixed precision.
  virtual bool ExactBatchNorm(const hlo::HloInstruction& bn) const = 0;
  // `fusion`, batch-norm-training with an elementwise consumer of its normalized output, or
  // batch-norm-grad with the producer of its dy (the batch-norm-fusion pass builds them), lowers to
  // one kernel that computes its values; the pass keeps only the fusions for which this holds.
  virtual bool ExactBatchNormFusion(const hlo::HloInstruction& fusion) const = 0;
  // `fusion`, a convolution with the sums of its output and of its squares per feature (the
  // convolution-statistics-fusion pass builds it), lowers to one kernel that computes its
  // values. A target without such a kernel keeps the default.
  virtual bool ExactConvolutionFusion(const hlo::HloInstruction& /*fusion*/) const { return false; }
  // `fusion`, add reductions over every dimension but the last of elementwise producers (the
  // elementwise-fusion pass builds them; the multi-output-fusion pass pairs them), lowers to
  // one kernel that computes its values. A target without such a kernel keeps the default.
  virtual bool ExactReductionFusion(const hlo::HloInstruction& /*fusion*/) const { return false; }
  // `fusion`, a loop fusion over matrices and per-feature vectors (the fusion-merger pass
  // builds them by merging or copying producers into it), lowers to a kernel that computes its
  // values. A target without such a kernel keeps the default.
  virtual bool ExactLoopFusion(const hlo::HloInstruction& /*fusion*/) const { return false; }
  // `fusion`, a loop fusion whose root is a tuple of elementwise results (the
  // multi-output-fusion pass builds them from a consumer and its producers), lowers to one
  // kernel that computes every element's values. A target without one keeps the default.
  virtual bool ExactMultiOutputLoopFusion(const hlo::HloInstruction& /*fusion*/) const {
    return false;
  }
  // Input channels below which the convolution kernel folds a window's taps into the MXU's
  // contraction (each staged pixel holds every tap's channels): the space-to-depth pass folds
  // the s x s blocks of a strided convolution's input into its channels below this. 0: none.
  virtual int64_t FoldedConvolutionChannels() const { return 0; }
  // `move`, a pad, concatenate or bitcast of bf16 values, runs on a kernel that moves them
  // exactly (the folding narrows such moves of f32 values that are then rounded to bf16).
  virtual bool ExactBf16Move(const hlo::HloInstruction& move) const = 0;
  // The elementwise kernels read a bf16 array of `shape` exactly, so a value folded to bf16
  // stays exact for the ops that read it (XLA's FloatSupport::SupportsLowPrecisionOperand).
  virtual bool ExactBf16Reads(const hlo::Shape& shape) const = 0;
};

}  // namespace tpusim::target
