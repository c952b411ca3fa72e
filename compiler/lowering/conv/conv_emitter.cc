// The convolution emitter (emitters.h): the weight-gradient kernel, else the implicit-GEMM
// kernel, else the MXU timing model of the convolution as a GEMM.
#include <optional>
#include <stdexcept>
#include <utility>

#include "compiler/lowering/conv/conv_select.h"
#include "compiler/lowering/conv/conv_wgrad_batch.h"
#include "compiler/lowering/dot/mxu_ops.h"
#include "compiler/lowering/driver/emitters.h"
#include "compiler/lowering/reduce/batch_norm_kernel.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;

// A 2-D convolution in NHWC form (any kernel layout) on the implicit-GEMM kernel of
// conv_kernel.h; empty when the shape is not one it takes (conv_select.h).
// `fusion`: the convolution-statistics fusion `instr` is the convolution of (its operands are
// the fusion's; its result and the sums are the fusion's tuple elements).
std::string ConvolutionKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op,
                              const HloInstruction* fusion = nullptr) {
  const ConvPlacement at{c.mxus};
  std::optional<ConvShape> shape = ConvShapeOf(instr, at);
  if (!shape) return "";
  ConvShape& s = *shape;
  const HloInstruction& outer = fusion ? *fusion : instr;
  s.input = c.address(outer.operand(0)), s.kernel = c.address(outer.operand(1));
  s.output = c.address(&outer);
  s.tag = outer.name();
  s.vmem_bytes = c.vmem_limit;
  if (fusion) {
    const std::optional<uint64_t> y = TupleElementAddress(outer, 0, c),
                                  sum = TupleElementAddress(outer, 1, c),
                                  squares = TupleElementAddress(outer, 2, c);
    if (!y || !sum || !squares || !s.output_bf16) return "";
    s.output = *y, s.statistics = true, s.sum = *sum, s.sum_squares = *squares;
  }
  std::string k;
  try {
    k = ConvKernel(s);
  } catch (const std::invalid_argument&) {
    return "";  // the GEMM fallback takes it
  }
  op.kind = KernelKind::kMxu;
  op.flops = static_cast<double>(ConvFlops(s));
  const int64_t oh = ConvOutputSize(s), ow = (s.w + s.pad_lo + s.pad_hi - s.kw) / s.stride + 1;
  const int64_t in_elem = s.input_f32 ? 4 : 2, ker_elem = s.kernel_f32 ? 4 : 2;
  const int64_t out_elem = s.output_bf16 ? 2 : 4;
  op.hbm_bytes = static_cast<uint64_t>(
      s.batch * (s.h * s.w * s.cin * in_elem + oh * ow * s.cout * out_elem) +
      s.kh * s.kw * s.cin * s.cout * ker_elem + (s.statistics ? 8 * s.cout : 0));
  op.exact = ConvKernelIsExact(instr);
  op.vmem_bytes = s.vmem_bytes;  // PlanConv kept to it
  const std::string& labels = instr.conv_dims()->labels;
  if (labels != "b01f_01io->b01f" && !s.kernel_oi)
    op.note = "kernel layout " + labels + ": timing of the 01io form";
  return k;
}

// bf16 dY lands as rows and the VPU transposes each 128x128 tile of it, once per K tile and
// cout block. A 1x1 gradient with more cout than cin blocks computes dW^T instead (X and
// dY swapped: the same contraction), writing it transposed: fewer tiles to transpose
// (ResNet-50's 64 -> 256 expansions: half), none for the result.
WeightGradShape FewerTransposes(const WeightGradShape& s) {
  const bool one_by_one = s.h == s.ho && s.w == s.wo && !s.pad_lo && !s.pad_hi && s.dilation == 1;
  if (!s.bf16 || !one_by_one || (s.cout + 127) / 128 <= (s.cin + 127) / 128) return s;
  WeightGradShape t = s;
  std::swap(t.x, t.dy), std::swap(t.cin, t.cout);
  t.transposed_out = true;
  try {
    CheckWeightGradShape(t);
  } catch (const std::invalid_argument&) {
    return s;
  }
  return t;
}

// A weight gradient (`f01b_i01o->01bf`, window = the output gradient's size, f32 or bf16 operands,
// DEFAULT precision) on the kernel of conv_wgrad.h; empty when it does not take it.
std::string WeightGrad(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  std::optional<WeightGradShape> shape = WeightGradShapeOf(instr, {c.mxus});
  if (!shape) return "";
  WeightGradShape& s = *shape;
  s.x = c.address(instr.operand(0)), s.dy = c.address(instr.operand(1)), s.dw = c.address(&instr);
  s.tag = instr.name();
  s.vmem_bytes = c.vmem_limit;
  const bool batch = BatchWeightGradTakes(s);
  if (!batch) s = FewerTransposes(s);
  std::string k;
  try {
    k = batch ? BatchWeightGradKernel(s) : WeightGradKernel(s);
  } catch (const std::invalid_argument&) {
    return "";
  }
  op.kind = KernelKind::kMxu;
  const std::vector<int64_t>& taps = instr.shape().dims;  // dW: [kh, kw, cin, cout]
  op.flops = 2.0 * s.batch * s.ho * s.wo * taps[0] * taps[1] * s.cin * s.cout;
  const hlo::Shape &x = instr.operand(0)->shape(), &dy = instr.operand(1)->shape();
  op.hbm_bytes = ByteSize(x) + ByteSize(dy) + ByteSize(instr.shape());
  op.exact = true;
  op.vmem_bytes = s.vmem_bytes;  // both weight-gradient plans keep to it
  return k;
}

}  // namespace

std::string ConvFusionKernel(const HloInstruction& fusion, const OpContext& c, LoweredOp& op) {
  const HloInstruction* conv = StatisticsConvolution(fusion);
  if (!conv || !ConvKernelIsExact(*conv)) return "";
  std::string k = ConvolutionKernel(*conv, c, op, &fusion);
  if (!k.empty()) op.note = "batch-norm statistics of the output summed as it drains";
  return k;
}

std::string EmitConvolution(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (std::string k = WeightGrad(instr, c, op); !k.empty()) return k;
  if (std::string k = ConvolutionKernel(instr, c, op); !k.empty()) return k;
  return MxuOp(ConvolutionWork(instr), instr, c, op);
}

}  // namespace tpusim::lowering
