// Batch normalization with its batch (any dimension but the feature one) split: inference
// runs on each device's tile with the whole statistics; training and its gradient are
// expanded as XLA's BatchNormExpander writes them, the per-feature sums all-reduced so every
// device uses the whole batch's statistics:
//   training: mean = E[x], var = E[x^2] - mean^2, y = (x - mean) * scale * rsqrt(var + eps)
//             + offset;
//   grad:     dbeta = sum(dy), dscale = sum(dy * (x - mean)) * rstd,
//             dx = scale * rstd / N * (N dy - dbeta - (x - mean) * rstd * dscale),
// with N the elements per feature of the whole batch and rstd = rsqrt(var + eps). The
// arithmetic runs in the statistics' element type: a bf16 x with f32 statistics (as
// bf16-conversion-folding leaves batch norm) is widened first and the result narrowed.
#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Opcode;
using hlo::Result;
using hlo::Shape;

namespace {

// Builds the expansion's instructions on one device.
class Expander {
 public:
  Expander(Partitioner& p, const HloInstruction& bn, int64_t feature, hlo::PrimitiveType type)
      : p_(p), bn_(bn), f_(feature), type_(type) {}

  // `a` in element type `type` (itself when it has it).
  HloInstruction* Convert(HloInstruction* a, hlo::PrimitiveType type) {
    if (a->shape().type == type) return a;
    Shape s = a->shape();
    s.type = type;
    return p_.Add(bn_.name() + ".convert", Opcode::kConvert, s, {a});
  }

  HloInstruction* Scalar(double v) {
    HloInstruction* c = p_.Add(bn_.name() + ".c", Opcode::kConstant, Shape::Array(type_, {}), {});
    c->mutable_literal().floats = {v};
    return c;
  }
  HloInstruction* Op(Opcode op, HloInstruction* a, HloInstruction* b) {
    return p_.Add(bn_.name() + "." + std::string(hlo::OpcodeName(op)), op, a->shape(), {a, b});
  }
  HloInstruction* Rsqrt(HloInstruction* a) {
    return p_.Add(bn_.name() + ".rsqrt", Opcode::kRsqrt, a->shape(), {a});
  }
  // A per-feature vector (or a scalar) spread over `like`'s shape.
  HloInstruction* Spread(HloInstruction* v, const Shape& like) {
    HloInstruction* b = p_.Add(bn_.name() + ".broadcast", Opcode::kBroadcast, like, {v});
    b->SetAttr("dimensions", v->shape().dims.empty() ? hlo::IntList{} : hlo::IntList{f_});
    return b;
  }
  // This device's per-feature sums of `x`.
  HloInstruction* Sums(HloInstruction* x) {
    hlo::IntList dims;
    for (int64_t d = 0; d < static_cast<int64_t>(x->shape().dims.size()); ++d) {
      if (d != f_) dims.push_back(d);
    }
    Shape out = Shape::Array(type_, {x->shape().dims[f_]});
    HloInstruction* r = p_.Add(bn_.name() + ".sum", Opcode::kReduce, out, {x, Scalar(0)});
    r->SetAttr("dimensions", dims);
    p_.SetReducer(*r, p_.AddComputation(type_));
    return r;
  }
  // The sums of every device.
  HloInstruction* AllSums(HloInstruction* x) {
    return p_.AllReduce(Sums(x), p_.AddComputation(type_));
  }
  HloInstruction* Tuple(const std::vector<HloInstruction*>& parts) {
    std::vector<Shape> shapes;
    for (const HloInstruction* v : parts) shapes.push_back(v->shape());
    return p_.Add(bn_.name(), Opcode::kTuple, Shape::Tuple(shapes), parts);
  }

 private:
  Partitioner& p_;
  const HloInstruction& bn_;
  int64_t f_;
  hlo::PrimitiveType type_;
};

}  // namespace

Result<std::optional<Local>> Partitioner::BatchNormRule(const HloInstruction& i) {
  const Local& x = Of(i.operand(0));
  const int64_t d = OneTiledDim(x.sharding);
  const std::optional<int64_t> f = i.GetInt("feature_index");
  const double eps = i.GetFloat("epsilon").value_or(0.0);
  const Shape& global = i.operand(0)->shape();
  if (d < 0 || !f || d == *f || !global.IsArray()) return NoRule();
  const HloSharding s = x.sharding;
  // Operands past the first: per-feature vectors made whole; batch-norm-grad's dy (the
  // last) laid out as x.
  std::vector<HloInstruction*> ops = {x.value};
  for (size_t k = 1; k < i.operand_count(); ++k) {
    const bool dy = i.opcode() == Opcode::kBatchNormGrad && k == 4;
    Result<HloInstruction*> r =
        Reshard(Of(i.operand(k)), i.operand(k)->shape(), dy ? s : HloSharding::Replicated());
    if (!r.ok()) return r.status();
    ops.push_back(r.value());
  }
  if (i.opcode() == Opcode::kBatchNormInference) {
    return std::optional<Local>(Local{Clone(i, x.value->shape(), ops), s});
  }
  if (pure_) return NoRule();  // the sums' all-reduce has no place in a fusion
  const hlo::PrimitiveType x_type = global.type;
  const hlo::PrimitiveType type = i.shape().IsTuple() && i.shape().tuple_shapes.size() == 3
                                      ? i.shape().tuple_shapes[1].type
                                      : x_type;
  Expander e(*this, i, *f, type);
  Shape local = x.value->shape();
  local.type = type;
  const double n = static_cast<double>(global.ElementCount() / global.dims[*f]);
  HloSharding out;
  out.kind = HloSharding::Kind::kTuple;
  out.elements = {s, HloSharding::Replicated(), HloSharding::Replicated()};
  HloInstruction* xl = e.Convert(ops[0], type);
  if (i.opcode() == Opcode::kBatchNormTraining) {
    HloInstruction* inv_n = e.Spread(e.Scalar(1.0 / n), Shape::Array(type, {global.dims[*f]}));
    HloInstruction* mean = e.Op(Opcode::kMultiply, e.AllSums(xl), inv_n);
    HloInstruction* squares = e.AllSums(e.Op(Opcode::kMultiply, xl, xl));
    HloInstruction* var = e.Op(Opcode::kSubtract, e.Op(Opcode::kMultiply, squares, inv_n),
                               e.Op(Opcode::kMultiply, mean, mean));
    HloInstruction* eps_v = e.Spread(e.Scalar(eps), var->shape());
    HloInstruction* gain = e.Op(Opcode::kMultiply, ops[1], e.Rsqrt(e.Op(Opcode::kAdd, var, eps_v)));
    HloInstruction* centred = e.Op(Opcode::kSubtract, xl, e.Spread(mean, local));
    HloInstruction* y = e.Op(Opcode::kAdd, e.Op(Opcode::kMultiply, centred, e.Spread(gain, local)),
                             e.Spread(ops[2], local));
    return std::optional<Local>(Local{e.Tuple({e.Convert(y, x_type), mean, var}), out});
  }
  if (i.opcode() != Opcode::kBatchNormGrad) return NoRule();
  HloInstruction *scale = ops[1], *mean = ops[2], *var = ops[3], *dy = e.Convert(ops[4], type);
  HloInstruction* rstd = e.Rsqrt(e.Op(Opcode::kAdd, var, e.Spread(e.Scalar(eps), var->shape())));
  HloInstruction* centred = e.Op(Opcode::kSubtract, xl, e.Spread(mean, local));
  HloInstruction* dbeta = e.AllSums(dy);
  HloInstruction* dscale =
      e.Op(Opcode::kMultiply, e.AllSums(e.Op(Opcode::kMultiply, dy, centred)), rstd);
  HloInstruction* n_dy = e.Op(Opcode::kMultiply, dy, e.Spread(e.Scalar(n), local));
  HloInstruction* inner = e.Op(
      Opcode::kSubtract, e.Op(Opcode::kSubtract, n_dy, e.Spread(dbeta, local)),
      e.Op(Opcode::kMultiply, centred, e.Spread(e.Op(Opcode::kMultiply, rstd, dscale), local)));
  HloInstruction* gain = e.Op(Opcode::kMultiply, e.Op(Opcode::kMultiply, scale, rstd),
                              e.Spread(e.Scalar(1.0 / n), scale->shape()));
  HloInstruction* dx = e.Op(Opcode::kMultiply, e.Spread(gain, local), inner);
  return std::optional<Local>(Local{e.Tuple({e.Convert(dx, x_type), dscale, dbeta}), out});
}

}  // namespace tpusim::spmd
