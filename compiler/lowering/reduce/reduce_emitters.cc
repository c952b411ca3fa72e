// The reduction emitters (emitters.h): each op on its exact kernel when it takes the op,
// else a timing-only stream over its operands (stream_op.h).
#include "compiler/lowering/driver/emitters.h"
#include "compiler/lowering/reduce/batch_norm_kernel.h"
#include "compiler/lowering/reduce/line_reduce_kernel.h"
#include "compiler/lowering/reduce/pool_grad_kernel.h"
#include "compiler/lowering/reduce/pool_kernel.h"
#include "compiler/lowering/vpu/stream_op.h"
#include "compiler/lowering/vpu/tile_ops.h"

namespace tpusim::lowering {

using hlo::HloInstruction;

// The tiled kernel (rows or columns of a 2-D view), else a line reduction over the last
// dimension with any reducer.
std::string EmitReduce(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string t = TileOpKernel(instr, c, op); !t.empty()) return t;
  if (std::string r = LineReduceKernel(instr, c, op); !r.empty()) return r;
  return ReductionStreamOp(instr, c, op);
}

std::string EmitBatchNorm(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string b = BatchNormKernel(instr, c, op); !b.empty()) return b;
  return ReductionStreamOp(instr, c, op);
}

std::string EmitReduceWindow(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string p = ReduceWindowKernel(instr, c, op); !p.empty()) return p;
  return ReductionStreamOp(instr, c, op);
}

// Max pooling's gradient.
std::string EmitSelectAndScatter(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string g = MaxPoolGradKernel(instr, c, op); !g.empty()) return g;
  return ReductionStreamOp(instr, c, op);
}

}  // namespace tpusim::lowering
