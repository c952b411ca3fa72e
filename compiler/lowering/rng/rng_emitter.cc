// The random-number emitter (emitters.h): the counter-based generator on the VPU, else the
// timing of a fill.
#include "compiler/lowering/driver/emitters.h"
#include "compiler/lowering/rng/rng_kernel.h"
#include "compiler/lowering/vpu/stream_op.h"

namespace tpusim::lowering {

std::string EmitRng(const hlo::HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string k = RngKernel(instr, c, c.rng_seed, op); !k.empty()) return k;
  return FillStreamOp(instr, c, op);
}

}  // namespace tpusim::lowering
