#include "compiler/lowering/driver/tensor_core_target.h"

#include "compiler/lowering/conv/conv_select.h"
#include "compiler/lowering/reduce/batch_norm_kernel.h"

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
};

}  // namespace

const target::TargetDescription& TensorCoreTarget() {
  static const TensorCoreDescription description;
  return description;
}

}  // namespace tpusim::lowering
