#include "compiler/lowering/driver/tensor_core_target.h"

#include "compiler/lowering/conv/conv_plan.h"
#include "compiler/lowering/conv/conv_select.h"
#include "compiler/lowering/data/move_ops.h"
#include "compiler/lowering/reduce/batch_norm_fusion.h"
#include "compiler/lowering/reduce/batch_norm_kernel.h"
#include "compiler/lowering/reduce/feature_fusion_kernel.h"
#include "compiler/lowering/vpu/stream_op.h"
#include "compiler/lowering/vpu/vpu_stream.h"

namespace tpusim::lowering {
namespace {

class TensorCoreDescription : public target::TargetDescription {
 public:
  bool ExactConvolution(const hlo::HloInstruction& conv) const override {
    return OnExactConvKernel(conv);
  }
  bool ExactBatchNorm(const hlo::HloInstruction& bn) const override {
    return BatchNormOnExactKernel(bn);
  }
  bool ExactBatchNormFusion(const hlo::HloInstruction& fusion) const override {
    return BatchNormFusionOnExactKernel(fusion);
  }
  bool ExactConvolutionFusion(const hlo::HloInstruction& fusion) const override {
    return ConvFusionOnExactKernel(fusion);
  }
  bool ExactReductionFusion(const hlo::HloInstruction& fusion) const override {
    return FeatureFusionOnExactKernel(fusion);
  }
  bool ExactLoopFusion(const hlo::HloInstruction& fusion) const override {
    return FeatureFusionOnExactKernel(fusion);
  }
  bool ExactMultiOutputLoopFusion(const hlo::HloInstruction& fusion) const override {
    return MultiOutputLoopOnExactKernel(fusion);
  }
  int64_t FoldedConvolutionChannels() const override { return kFoldBelowCin; }
  bool ExactBf16Move(const hlo::HloInstruction& move) const override {
    return Bf16MoveOnExactKernel(move);
  }
  // VPU streams widen bf16 operands exactly when the value is a whole number of vregs (the
  // tiled kernel reads 32-bit elements only).
  bool ExactBf16Reads(const hlo::Shape& shape) const override {
    return shape.IsArray() && shape.ElementCount() > 0 && shape.ElementCount() % kVregElements == 0;
  }
};

}  // namespace

const target::TargetDescription& TensorCoreTarget() {
  static const TensorCoreDescription description;
  return description;
}

}  // namespace tpusim::lowering
