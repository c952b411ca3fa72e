// What the lowering asks of an op before it builds a VPU body: whether a predicate is
// recomputed in its users, and how many VPU operations per vreg a non-elementwise op costs.
#include <algorithm>

#include "compiler/hlo/opcode.h"
#include "compiler/lowering/vpu/vpu_body.h"

namespace tpusim::lowering {

using hlo::HloInstruction;
using hlo::Opcode;

bool InlinedIntoUsers(const HloInstruction& op) {
  if (op.shape().type != hlo::PrimitiveType::kPred || !op.shape().IsArray()) return false;
  // Its operands must outlive it (the memory plan frees them after this op): constants,
  // iotas the users regenerate, or parameters it reads last (a later reader could be a
  // donated update that overwrites the parameter's buffer).
  for (const HloInstruction* o : op.operands()) {
    if (o->opcode() == Opcode::kConstant || o->opcode() == Opcode::kIota) continue;
    if (o->opcode() != Opcode::kParameter || !op.parent()) return false;
    bool after = false;
    for (const auto& i : op.parent()->instructions()) {
      const auto& ops = i->operands();
      if (after && std::find(ops.begin(), ops.end(), o) != ops.end()) return false;
      after = after || i.get() == &op;
    }
  }
  if (op.opcode() == Opcode::kFusion && op.fused_computation()) {
    for (const auto& i : op.fused_computation()->instructions())
      if (i->opcode() == Opcode::kDot || i->opcode() == Opcode::kConvolution) return false;
    return true;
  }
  const hlo::OpCategory c = hlo::GetOpcodeInfo(op.opcode()).category;
  return c == hlo::OpCategory::kElementwiseUnary || c == hlo::OpCategory::kElementwiseBinary ||
         c == hlo::OpCategory::kElementwiseTernary;
}

int VpuOpsPerVreg(const HloInstruction& op) {
  switch (op.opcode()) {
    case Opcode::kBatchNormTraining:
      return 8;  // mean, variance, normalise, scale, shift
    case Opcode::kBatchNormGrad:
      return 10;
    case Opcode::kBatchNormInference:
      return 4;
    case Opcode::kSelectAndScatter:
      return 4;  // compare, select, add per window element
    case Opcode::kSort:
      return 16;  // bitonic steps on 8 sublanes
    case Opcode::kReduceWindow: {
      const hlo::Window* w = op.window();
      int64_t taps = 1;
      if (w)
        for (const hlo::WindowDim& d : w->dims) taps *= d.size;
      return static_cast<int>(std::min<int64_t>(taps, 64));
    }
    default:
      return 1;  // reduce: one add or max per vreg
  }
}

}  // namespace tpusim::lowering
