#include "compiler/lowering/conv/conv_select.h"

#include <stdexcept>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/conv/conv_plan.h"
#include "compiler/lowering/conv/conv_wgrad_batch.h"
#include "compiler/lowering/dot/mxu_ops.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::PrimitiveType;

bool IsParameter(const HloInstruction* i, int64_t n) {
  return i->opcode() == hlo::Opcode::kParameter && i->parameter_number() == n;
}

// reduce(x, 0.0) adding f32 over every dimension but `feature`.
bool IsFeatureSum(const HloInstruction* r, const HloInstruction* x, int64_t feature) {
  if (r->opcode() != hlo::Opcode::kReduce || r->operand_count() != 2 || r->operand(0) != x ||
      r->shape().type != PrimitiveType::kF32 || !r->dimensions() || !r->to_apply())
    return false;
  const HloInstruction* zero = r->operand(1);
  if (zero->opcode() != hlo::Opcode::kConstant || !zero->shape().IsScalar() ||
      zero->literal().floats != std::vector<double>{0.0})
    return false;
  hlo::IntList dims;
  for (int64_t d = 0; d < static_cast<int64_t>(x->shape().dims.size()); ++d)
    if (d != feature) dims.push_back(d);
  const HloInstruction* add = r->to_apply()->root();
  return *r->dimensions() == dims && add && add->opcode() == hlo::Opcode::kAdd &&
         add->operand(0)->opcode() == hlo::Opcode::kParameter &&
         add->operand(1)->opcode() == hlo::Opcode::kParameter && add->operand(0) != add->operand(1);
}

bool OneGroup(const HloInstruction& conv) {
  return conv.GetInt("feature_group_count").value_or(1) == 1 &&
         conv.GetInt("batch_group_count").value_or(1) == 1;
}

}  // namespace

std::optional<WeightGradShape> WeightGradShapeOf(const HloInstruction& conv,
                                                 const ConvPlacement& at) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const hlo::Window* win = conv.window();
  if (conv.opcode() != hlo::Opcode::kConvolution || conv.operand_count() != 2) return std::nullopt;
  const hlo::Shape &x = conv.operand(0)->shape(), &dy = conv.operand(1)->shape();
  const bool f32 = x.type == PrimitiveType::kF32 && dy.type == PrimitiveType::kF32;
  const bool bf16 = x.type == PrimitiveType::kBF16 && dy.type == PrimitiveType::kBF16;
  if (!cd || cd->labels != "f01b_i01o->01bf" || !win || win->dims.size() != 2 || !(f32 || bf16) ||
      conv.shape().type != PrimitiveType::kF32 || !OneGroup(conv) ||
      ConvolutionWork(conv).passes != 1)
    return std::nullopt;
  // Window dilation and padding (the kernel takes them only with folded taps) must be the
  // same in both spatial dimensions.
  const hlo::WindowDim &wy = win->dims[0], &wx = win->dims[1];
  for (const hlo::WindowDim& d : win->dims)
    if (d.stride != 1 || d.lhs_dilate != 1 || d.reversal || d.pad_low < 0 || d.pad_high < 0 ||
        d.rhs_dilate != wy.rhs_dilate || d.pad_low != wy.pad_low || d.pad_high != wy.pad_high)
      return std::nullopt;
  WeightGradShape s;
  s.batch = x.dims[0], s.h = x.dims[1], s.w = x.dims[2], s.cin = x.dims[3];
  s.ho = dy.dims[1], s.wo = dy.dims[2], s.cout = dy.dims[3];
  s.dilation = wx.rhs_dilate, s.pad_lo = wx.pad_low, s.pad_hi = wx.pad_high;
  if (dy.dims[0] != s.batch || win->dims[0].size != s.ho || win->dims[1].size != s.wo)
    return std::nullopt;
  s.bf16 = bf16;
  s.mxus = at.mxus;
  if (BatchWeightGradTakes(s)) return s;
  try {
    CheckWeightGradShape(s);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  return s;
}

std::optional<ConvShape> ConvShapeOf(const HloInstruction& conv, const ConvPlacement& at) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const hlo::Window* win = conv.window();
  if (conv.opcode() != hlo::Opcode::kConvolution || conv.operand_count() != 2 || !cd || !win ||
      win->dims.size() != 2 || !OneGroup(conv) || cd->input_batch != 0 || cd->input_feature != 3 ||
      cd->output_batch != 0 || cd->output_feature != 3)
    return std::nullopt;
  const hlo::WindowDim &y = win->dims[0], &x = win->dims[1];
  if (y.stride != x.stride || y.pad_low != x.pad_low || y.pad_high != x.pad_high ||
      y.lhs_dilate != 1 || x.lhs_dilate != 1 || y.rhs_dilate != 1 || x.rhs_dilate != 1 ||
      y.reversal || x.reversal)
    return std::nullopt;
  const hlo::Shape &in = conv.operand(0)->shape(), &ker = conv.operand(1)->shape();
  ConvShape s;
  s.batch = in.dims[0], s.h = in.dims[1], s.w = in.dims[2];
  s.cin = ker.dims[static_cast<size_t>(cd->kernel_input_feature)];
  s.cout = ker.dims[static_cast<size_t>(cd->kernel_output_feature)];
  s.kh = y.size, s.kw = x.size, s.stride = y.stride, s.pad_lo = y.pad_low, s.pad_hi = y.pad_high;
  s.input_f32 = in.type == PrimitiveType::kF32;
  s.kernel_f32 = ker.type == PrimitiveType::kF32;
  s.kernel_oi = cd->labels == "b01f_01oi->b01f";
  s.output_bf16 = conv.shape().type == PrimitiveType::kBF16;
  s.mxus = at.mxus;
  s.smem_bytes = assembly::kKernelSmemBytes;
  try {
    PlanConv(s);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  return s;
}

bool ConvKernelIsExact(const HloInstruction& conv) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const bool known_layout =
      cd && (cd->labels == "b01f_01io->b01f" || cd->labels == "b01f_01oi->b01f");
  return known_layout && FloatOrBf16(conv.operand(0)->shape()) &&
         FloatOrBf16(conv.operand(1)->shape()) && FloatOrBf16(conv.shape()) &&
         ConvolutionWork(conv).passes == 1;
}

bool OnExactConvKernel(const HloInstruction& conv, const ConvPlacement& at) {
  if (WeightGradShapeOf(conv, at)) return true;
  return ConvShapeOf(conv, at) && ConvKernelIsExact(conv);
}

const HloInstruction* StatisticsConvolution(const HloInstruction& fusion) {
  const hlo::HloComputation* fc = fusion.fused_computation();
  if (fusion.opcode() != hlo::Opcode::kFusion || !fc) return nullptr;
  const HloInstruction* root = fc->root();
  if (!root || root->opcode() != hlo::Opcode::kTuple || root->operand_count() != 3) return nullptr;
  const HloInstruction *conv = root->operand(0), *sum = root->operand(1),
                       *squares = root->operand(2);
  if (conv->opcode() != hlo::Opcode::kConvolution || conv->operand_count() != 2 ||
      !IsParameter(conv->operand(0), 0) || !IsParameter(conv->operand(1), 1) ||
      !conv->conv_dims() || sum->operand_count() != 2 || squares->operand_count() != 2)
    return nullptr;
  const HloInstruction *wide = sum->operand(0), *square = squares->operand(0);
  const int64_t feature = conv->conv_dims()->output_feature;
  if (wide->opcode() != hlo::Opcode::kConvert || wide->operand(0) != conv ||
      wide->shape().type != PrimitiveType::kF32 || square->opcode() != hlo::Opcode::kMultiply ||
      square->operand(0) != wide || square->operand(1) != wide ||
      !IsFeatureSum(sum, wide, feature) || !IsFeatureSum(squares, square, feature))
    return nullptr;
  return conv;
}

bool ConvFusionOnExactKernel(const HloInstruction& fusion, const ConvPlacement& at) {
  const HloInstruction* conv = StatisticsConvolution(fusion);
  if (!conv || !ConvKernelIsExact(*conv)) return false;
  std::optional<ConvShape> s = ConvShapeOf(*conv, at);
  if (!s || !s->output_bf16) return false;
  s->statistics = true;
  try {
    PlanConv(*s);
  } catch (const std::invalid_argument&) {
    return false;
  }
  return true;
}

}  // namespace tpusim::lowering
