// The dot emitter (emitters.h) and the MXU op every contraction ends in.
#include "compiler/lowering/dot/exact_dot_op.h"
#include "compiler/lowering/dot/mxu_ops.h"
#include "compiler/lowering/driver/emitters.h"

namespace tpusim::lowering {

using hlo::HloInstruction;

std::string MxuOp(MxuWork w, const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  op.kind = KernelKind::kMxu;
  op.flops = w.flops;
  std::string k = MxuKernel(w, c.address(instr.operand(0)), c.address(instr.operand(1)),
                            c.address(&instr), instr.name(), c.mxus);
  op.exact = w.exact;
  op.note = w.note;
  op.hbm_bytes = static_cast<uint64_t>(w.batch * (w.m * w.k * 2 + w.k * w.n * 2 + w.m * w.n * 4));
  if (op.exact) {  // wait for the last result copies (see kStreamOutputFence): the MXUs'
    // output credits f6, f7 (matmul_kernel.cc) are back once they land
    k += "    sflag f15, 0\n";
    for (int m = 0; m < c.mxus; ++m) k += "    signal mxu" + std::to_string(m) + ", f15, 1\n";
    k += "    wait seq, f15, " + std::to_string(c.mxus) +
         "\n    wait seq, f6, 1\n    wait seq, f7, 1\n";
  }
  return k;
}

// The tiled MXU kernel when it is exact, else the streaming exact dot when it takes the dot,
// else the tiled kernel's timing.
std::string EmitDot(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  std::string k = MxuOp(DotWork(instr), instr, c, op);
  if (!op.exact)
    if (std::string e = ExactDotOp(instr, c, op); !e.empty()) return op.note.clear(), e;
  return k;
}

}  // namespace tpusim::lowering
