#include "compiler/analysis/cost_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "compiler/hlo/opcode.h"

namespace tpusim::analysis {
namespace {

using hlo::HloInstruction;
using hlo::OpCategory;
using hlo::Opcode;

constexpr double kFmaFlops = 2;  // a multiply-add is two FLOPs

double Elements(const hlo::Shape& s) {
  return static_cast<double>(
      s.IsTuple() ? (s.tuple_shapes.empty() ? 0 : Elements(s.tuple_shapes[0])) : s.ElementCount());
}

// The array a reduce-like op counts: a tuple's first element.
const hlo::Shape& FirstArray(const hlo::Shape& s) {
  return s.IsTuple() && !s.tuple_shapes.empty() ? s.tuple_shapes[0] : s;
}

bool Transcendental(Opcode op) {
  switch (op) {
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kPower:
    case Opcode::kSqrt:
    case Opcode::kRsqrt:
    case Opcode::kTanh:
    case Opcode::kSin:
    case Opcode::kCos:
    case Opcode::kErf:
      return true;
    default:
      return false;
  }
}

OpCost Scaled(OpCost c, double times) {
  c.flops *= times, c.transcendentals *= times;
  return c;
}

OpCost OfCalled(const hlo::HloComputation* comp) { return comp ? CostOf(*comp) : OpCost{}; }

// Output positions x kernel taps of one spatial dimension that read an input element:
// not padding, not a hole of lhs dilation.
int64_t ValidPositions(const hlo::WindowDim& w, int64_t input, int64_t kernel, int64_t output) {
  int64_t n = 0;
  for (int64_t k = 0; k < kernel; ++k)
    for (int64_t o = 0; o < output; ++o) {
      const int64_t undilated = o * w.stride - w.pad_low + k * w.rhs_dilate;
      if (undilated < 0 || undilated % w.lhs_dilate) continue;
      if (undilated / w.lhs_dilate < input) ++n;
    }
  return n;
}

double ConvolutionFlops(const HloInstruction& conv) {
  const hlo::ConvDims* d = conv.conv_dims();
  const hlo::Window* win = conv.window();
  if (!d || conv.operand_count() != 2) return 0;
  const hlo::Shape &lhs = conv.operand(0)->shape(), &rhs = conv.operand(1)->shape(),
                   &out = conv.shape();
  const int64_t groups = conv.GetInt("feature_group_count").value_or(1);
  const int64_t batch_groups = conv.GetInt("batch_group_count").value_or(1);
  double fmas = static_cast<double>(lhs.dims[static_cast<size_t>(d->input_feature)] / groups) *
                static_cast<double>(out.dims[static_cast<size_t>(d->output_feature)]) *
                static_cast<double>(lhs.dims[static_cast<size_t>(d->input_batch)] / batch_groups);
  for (size_t s = 0; s < d->input_spatial.size(); ++s) {
    const hlo::WindowDim w = win && s < win->dims.size() ? win->dims[s] : hlo::WindowDim{};
    fmas *=
        static_cast<double>(ValidPositions(w, lhs.dims[static_cast<size_t>(d->input_spatial[s])],
                                           rhs.dims[static_cast<size_t>(d->kernel_spatial[s])],
                                           out.dims[static_cast<size_t>(d->output_spatial[s])]));
  }
  return kFmaFlops * fmas;
}

double DotFlops(const HloInstruction& dot) {
  double width = 1;
  if (const hlo::IntList* c = dot.GetIntList("lhs_contracting_dims"))
    for (int64_t k : *c)
      width *= static_cast<double>(dot.operand(0)->shape().dims[static_cast<size_t>(k)]);
  return kFmaFlops * Elements(dot.shape()) * width;
}

double WindowElements(const hlo::Window* w) {
  double n = 1;
  if (w)
    for (const hlo::WindowDim& d : w->dims) n *= static_cast<double>(d.size);
  return n;
}

}  // namespace

OpCost CostOf(const HloInstruction& instr) {
  const Opcode op = instr.opcode();
  const OpCategory cat = hlo::GetOpcodeInfo(op).category;
  OpCost c;
  if (cat == OpCategory::kElementwiseUnary || cat == OpCategory::kElementwiseBinary ||
      cat == OpCategory::kElementwiseTernary) {
    (Transcendental(op) ? c.transcendentals : c.flops) = Elements(instr.shape());
    return c;
  }
  switch (op) {
    case Opcode::kDot:
      c.flops = DotFlops(instr);
      return c;
    case Opcode::kConvolution:
      c.flops = ConvolutionFlops(instr);
      return c;
    case Opcode::kFusion:
      return OfCalled(instr.fused_computation());
    case Opcode::kCall:
      return OfCalled(instr.to_apply());
    case Opcode::kWhile:
      return OfCalled(instr.body()) += OfCalled(instr.condition());
    case Opcode::kConditional:
      for (const hlo::HloComputation* branch : instr.called_computations()) {
        const OpCost b = OfCalled(branch);
        c.flops = std::max(c.flops, b.flops);
        c.transcendentals = std::max(c.transcendentals, b.transcendentals);
      }
      return c;
    case Opcode::kReduce:  // the reducer once per element folded away
      if (instr.operand_count() == 0) return c;
      return Scaled(OfCalled(instr.to_apply()), Elements(FirstArray(instr.operand(0)->shape())) -
                                                    Elements(FirstArray(instr.shape())));
    case Opcode::kReduceWindow:
      return Scaled(OfCalled(instr.to_apply()),
                    (WindowElements(instr.window()) - 1) * Elements(FirstArray(instr.shape())));
    case Opcode::kSelectAndScatter: {
      if (instr.operand_count() < 2) return c;
      const double source = Elements(instr.operand(1)->shape());
      c = Scaled(OfCalled(instr.CalledComputation("select")),
                 source * (WindowElements(instr.window()) - 1));
      return c += Scaled(OfCalled(instr.CalledComputation("scatter")), source);
    }
    case Opcode::kScatter:
      if (instr.operand_count() < 3) return c;
      return Scaled(OfCalled(instr.to_apply()), Elements(instr.operand(2)->shape()));
    case Opcode::kSort: {  // a comparison sort, n log n
      if (instr.operand_count() == 0) return c;
      const double n = Elements(instr.operand(0)->shape());
      c.flops = n * std::ceil(std::log2(std::max(1.0, n)));
      return c;
    }
    case Opcode::kAllReduce:  // XLA assumes two replicas: one add per element
      for (const hlo::Shape& s :
           instr.shape().IsTuple() ? instr.shape().tuple_shapes : std::vector{instr.shape()})
        c.flops += Elements(s);
      return c;
    case Opcode::kRng:
    case Opcode::kRngBitGenerator:  // XLA: one transcendental per element of every leaf
      for (const hlo::Shape& s :
           instr.shape().IsTuple() ? instr.shape().tuple_shapes : std::vector{instr.shape()})
        c.transcendentals += Elements(s);
      return c;
    // XLA's cost analysis counts nothing for the batch-norm ops: TPU and GPU compilers
    // expand them first (BatchNormExpander) and count the parts. Per element of x, the
    // expansion is: training x*x, sum(x), sum(x*x), x - mean, * scale/sqrt(var + eps),
    // + offset (6); inference the last three (3); grad x - mean, dy * (x - mean) and its
    // sum, sum(dy), N * dy, - sum(dy), (x - mean) * factor, -, * scale/sqrt(var + eps) (9).
    case Opcode::kBatchNormTraining:
      return Scaled(OpCost{6, 0}, instr.operand_count() ? Elements(instr.operand(0)->shape()) : 0);
    case Opcode::kBatchNormInference:
      return Scaled(OpCost{3, 0}, instr.operand_count() ? Elements(instr.operand(0)->shape()) : 0);
    case Opcode::kBatchNormGrad:
      return Scaled(OpCost{9, 0}, instr.operand_count() ? Elements(instr.operand(0)->shape()) : 0);
    default:  // data movement, sources, collectives other than all-reduce
      return c;
  }
}

OpCost CostOf(const hlo::HloComputation& comp) {
  OpCost c;
  for (const auto& i : comp.instructions()) c += CostOf(*i);
  return c;
}

}  // namespace tpusim::analysis
