#include "compiler/passes/fusion/fusion_ops.h"

namespace tpusim::passes {

bool IsElementwise(const hlo::HloInstruction& i) {
  const hlo::OpCategory c = hlo::GetOpcodeInfo(i.opcode()).category;
  return i.shape().IsArray() &&
         (c == hlo::OpCategory::kElementwiseUnary || c == hlo::OpCategory::kElementwiseBinary ||
          c == hlo::OpCategory::kElementwiseTernary);
}

bool IsCheap(const hlo::HloInstruction& i) {
  switch (i.opcode()) {
    case hlo::Opcode::kAdd:
    case hlo::Opcode::kSubtract:
    case hlo::Opcode::kMultiply:
    case hlo::Opcode::kMaximum:
    case hlo::Opcode::kMinimum:
    case hlo::Opcode::kNegate:
    case hlo::Opcode::kAbs:
    case hlo::Opcode::kConvert:
    case hlo::Opcode::kCompare:
    case hlo::Opcode::kSelect:
    case hlo::Opcode::kAnd:
    case hlo::Opcode::kOr:
    case hlo::Opcode::kNot:
      return IsElementwise(i);
    default:
      return false;
  }
}

}  // namespace tpusim::passes
