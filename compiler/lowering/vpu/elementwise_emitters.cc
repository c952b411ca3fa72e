// The VPU's elementwise emitters (emitters.h): elementwise ops and loop fusions as streams
// (vpu_stream.h) or, when operands broadcast or sizes are ragged, the tiled kernel
// (tile_ops.h); broadcasts and iotas; fusions around a contraction or rooted in a reduce.
#include <algorithm>

#include "compiler/hlo/opcode.h"
#include "compiler/lowering/data/move_ops.h"
#include "compiler/lowering/dot/mxu_ops.h"
#include "compiler/lowering/driver/emitters.h"
#include "compiler/lowering/reduce/batch_norm_fusion.h"
#include "compiler/lowering/reduce/batch_norm_kernel.h"
#include "compiler/lowering/reduce/feature_fusion_kernel.h"
#include "compiler/lowering/reduce/line_reduce_kernel.h"
#include "compiler/lowering/vpu/stream_op.h"
#include "compiler/lowering/vpu/tile_ops.h"
#include "compiler/lowering/vpu/vpu_body.h"
#include "compiler/lowering/vpu/vpu_stream.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::OpCategory;
using hlo::Opcode;

const HloInstruction* FusedContraction(const HloInstruction& fusion) {
  if (!fusion.fused_computation()) return nullptr;
  for (const auto& i : fusion.fused_computation()->instructions())
    if (i->opcode() == Opcode::kDot || i->opcode() == Opcode::kConvolution) return i.get();
  return nullptr;
}

bool AllFullSize(const VpuBody& b, const HloInstruction& instr) {
  if (!FloatOrBf16(instr.shape()) || instr.shape().ElementCount() % kVregElements) return false;
  return std::all_of(b.inputs.begin(), b.inputs.end(), [&](const HloInstruction* in) {
    return IsF32Scalar(in->shape()) ||  // splat into its vreg (vpu_stream.h)
           ((FloatOrBf16(in->shape()) || in->shape().type == hlo::PrimitiveType::kS32 ||
             in->shape().type == hlo::PrimitiveType::kU32) &&
            in->shape().ElementCount() == instr.shape().ElementCount());
  });
}

// Every user of `instr` is an elementwise op or loop fusion, which inlines it (vpu_body.h);
// it is not a result of the computation.
bool UsersRecompute(const HloInstruction& instr) {
  const hlo::HloComputation* parent = instr.parent();
  if (!parent || parent->root() == &instr) return false;
  for (const auto& u : parent->instructions()) {
    const auto& ops = u->operands();
    if (std::find(ops.begin(), ops.end(), &instr) == ops.end()) continue;
    const OpCategory cat = hlo::GetOpcodeInfo(u->opcode()).category;
    const bool elementwise = cat == OpCategory::kElementwiseUnary ||
                             cat == OpCategory::kElementwiseBinary ||
                             cat == OpCategory::kElementwiseTernary;
    if (!elementwise && (u->opcode() != Opcode::kFusion || FusedContraction(*u))) return false;
  }
  return true;
}

// An elementwise op or loop fusion: a predicate its users recompute needs no kernel; else
// the stream of its body when every operand is full size, else the tiled kernel, else the
// stream's timing.
std::string ElementwiseOp(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (InlinedIntoUsers(instr) && UsersRecompute(instr)) {
    op.exact = true;
    op.note = "pred: recomputed inside each user (the VPU stores 32-bit elements)";
    return "";
  }
  VpuBody body = BuildVpuBody(instr);
  std::string k = StreamOp(instr, c, op, body.inputs, &body, 0);
  op.exact = body.exact && AllFullSize(body, instr) && body.inputs.size() <= 6;
  if (!op.exact)  // broadcast operands or ragged sizes: the tiled kernel computes them
    if (std::string t = TileOpKernel(instr, c, op); !t.empty()) return t;  // reports its VMEM
  if (!op.exact) return k;
  // The stream counts its buffers' flags from zero (a tiled matmul leaves f2, f3 set), and
  // its results must be in HBM before the next kernel reads them.
  k.insert(k.find('\n', k.find(".tag")) + 1,
           "    sflag f0, 0\n    sflag f1, 0\n    sflag f2, 0\n    sflag f3, 0\n");
  return k + kStreamOutputFence;
}

// A multi-output loop fusion every element of which a get-tuple-element reads: one stream.
std::string MultiOutputLoop(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  std::optional<VpuBody> body = MultiOutputLoopBody(instr);
  if (!body) return "";
  std::vector<uint64_t> outputs;
  for (size_t k = 0; k < instr.shape().tuple_shapes.size(); ++k) {
    const std::optional<uint64_t> a = TupleElementAddress(instr, static_cast<int64_t>(k), c);
    if (!a || (k > 0 && *a == c.address(&instr))) return "";
    outputs.push_back(*a);
  }
  op.exact = true;
  return MultiOutputStreamOp(instr, c, op, *body, outputs);
}

}  // namespace

std::string EmitElementwise(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  return ElementwiseOp(instr, c, op);
}

std::string EmitFusion(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  // A convolution with the batch-norm statistics of its output (passes/fusion/conv_stats_fusion.h).
  if (std::string k = ConvFusionKernel(instr, c, op); !k.empty()) return k;
  // MXU work, then the epilogue, timing only: reached only when lowering runs without the
  // pipeline, whose contraction-defusion pass inlines these fusions.
  if (const HloInstruction* mm = FusedContraction(instr)) {
    MxuWork w = mm->opcode() == Opcode::kDot ? DotWork(*mm) : ConvolutionWork(*mm);
    std::string k = MxuOp(w, instr, c, op);
    LoweredOp epilogue;
    k += StreamOp(instr, c, epilogue, {&instr}, nullptr, 2);
    op.note += (op.note.empty() ? "" : "; ") + std::string("fused epilogue on the VPU");
    op.exact = false;
    return k;
  }
  // batch norm with its elementwise neighbours (passes/fusion/bn_fusion.h).
  if (std::string b = BatchNormFusionKernel(instr, c, op); !b.empty()) return b;
  // A multi-output loop fusion (passes/fusion/multi_output_fusion.h): one stream, a store per
  // element.
  if (std::string m = MultiOutputLoop(instr, c, op); !m.empty()) return m;
  // XLA's kInput fusion: per-feature sums of elementwise producers, or a reduce of them
  // over the last dimension.
  const bool loop = instr.fused_computation() &&
                    instr.fused_computation()->root()->opcode() != Opcode::kReduce &&
                    instr.fused_computation()->root()->opcode() != Opcode::kTuple;
  if (!loop) {
    if (std::string r = FeatureFusionKernel(instr, c, op); !r.empty()) return r;
  }
  if (std::string r = LineReduceKernel(instr, c, op); !r.empty()) return r;
  std::string k = ElementwiseOp(instr, c, op);
  if (op.exact || !loop) return k;
  // A loop fusion over bf16 matrices and per-feature vectors (an expanded batch norm's
  // normalize) streams flat when the elementwise kernels cannot compute it.
  LoweredOp flat = op;
  flat.note.clear();
  if (std::string r = FeatureFusionKernel(instr, c, flat); !r.empty()) {
    op = flat;
    return r;
  }
  return k;
}

// The tiled kernel, else strided DMA moves, else a fill's timing.
std::string EmitBroadcast(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string t = TileOpKernel(instr, c, op); !t.empty()) return t;
  if (std::string m = MoveOpKernel(instr, c, op); !m.empty()) return m;
  return FillStreamOp(instr, c, op);
}

std::string EmitIota(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string t = TileOpKernel(instr, c, op); !t.empty()) return t;
  return FillStreamOp(instr, c, op);
}

}  // namespace tpusim::lowering
