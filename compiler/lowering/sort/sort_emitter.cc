// The sort emitter (emitters.h): the bitonic network on the VPU, else its timing.
#include "compiler/lowering/driver/emitters.h"
#include "compiler/lowering/sort/sort_kernel.h"
#include "compiler/lowering/vpu/stream_op.h"

namespace tpusim::lowering {

std::string EmitSort(const hlo::HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string k = SortKernel(instr, c, op); !k.empty()) return k;
  return ReductionStreamOp(instr, c, op);
}

}  // namespace tpusim::lowering
