// Batch normalization: training, inference, grad. Statistics and outputs are computed in
// double over every dimension but feature_index, then rounded to the element type; the
// variance is the biased (divide by N) one.
#include <cmath>

#include "compiler/eval/interpreter.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

struct Layout {
  int64_t features = 0, inner = 1;  // elements of feature f at (o*features + f)*inner + i
  int64_t per_feature = 0;          // N, elements per feature
  int64_t Feature(int64_t linear) const { return (linear / inner) % features; }
};

Result<Layout> GetLayout(const HloInstruction& instr, const Value& x) {
  std::optional<int64_t> fi = instr.GetInt("feature_index");
  if (!fi || *fi < 0 || *fi >= x.shape.rank()) return InstrError(instr, "bad feature_index");
  Layout l;
  l.features = x.dims()[*fi];
  for (int64_t d = *fi + 1; d < x.shape.rank(); ++d) l.inner *= x.dims()[d];
  l.per_feature = l.features ? x.size() / l.features : 0;
  return l;
}

// Per-feature means of f(i) over the elements of x.
template <typename F>
std::vector<double> FeatureMean(const Layout& l, int64_t size, F f) {
  std::vector<double> m(l.features, 0.0);
  for (int64_t i = 0; i < size; ++i) m[l.Feature(i)] += f(i);
  for (double& v : m) v /= static_cast<double>(l.per_feature);
  return m;
}

Value Vec(const hlo::Shape& shape, const std::vector<double>& v) {
  return Value::FromVector(shape, v);
}

Result<Value> Training(const HloInstruction& instr, Operands ops, Interpreter&) {
  const Value &x = *ops[0], &scale = *ops[1], &offset = *ops[2];
  Result<Layout> l = GetLayout(instr, x);
  if (!l.ok()) return l.status();
  double eps = instr.GetFloat("epsilon").value_or(0.0);
  std::vector<double> mean = FeatureMean(*l, x.size(), [&](int64_t i) { return x.data[i]; });
  std::vector<double> var = FeatureMean(*l, x.size(), [&](int64_t i) {
    double d = x.data[i] - mean[l->Feature(i)];
    return d * d;
  });
  Value y = Value::Zeros(instr.shape().tuple_shapes.at(0));
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t f = l->Feature(i);
    y.data[i] = RoundTo(
        y.type(), (x.data[i] - mean[f]) / std::sqrt(var[f] + eps) * scale.data[f] + offset.data[f]);
  }
  return Value::Tuple({std::move(y), Vec(instr.shape().tuple_shapes.at(1), mean),
                       Vec(instr.shape().tuple_shapes.at(2), var)});
}

Result<Value> Inference(const HloInstruction& instr, Operands ops, Interpreter&) {
  const Value &x = *ops[0], &scale = *ops[1], &offset = *ops[2], &mean = *ops[3], &var = *ops[4];
  Result<Layout> l = GetLayout(instr, x);
  if (!l.ok()) return l.status();
  double eps = instr.GetFloat("epsilon").value_or(0.0);
  Value y = Value::Zeros(instr.shape());
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t f = l->Feature(i);
    y.data[i] = RoundTo(
        y.type(),
        (x.data[i] - mean.data[f]) / std::sqrt(var.data[f] + eps) * scale.data[f] + offset.data[f]);
  }
  return y;
}

// grad_x = scale / sqrt(var + eps) * (dy - mean(dy) - (x - mean) * mean(dy * (x - mean)) /
// (var + eps)); grad_scale = sum(dy * (x - mean)) / sqrt(var + eps); grad_offset = sum(dy).
Result<Value> Grad(const HloInstruction& instr, Operands ops, Interpreter&) {
  const Value &x = *ops[0], &scale = *ops[1], &mean = *ops[2], &var = *ops[3], &dy = *ops[4];
  Result<Layout> l = GetLayout(instr, x);
  if (!l.ok()) return l.status();
  double eps = instr.GetFloat("epsilon").value_or(0.0);
  auto centered = [&](int64_t i) { return x.data[i] - mean.data[l->Feature(i)]; };
  std::vector<double> mean_dy = FeatureMean(*l, x.size(), [&](int64_t i) { return dy.data[i]; });
  std::vector<double> mean_dyx =
      FeatureMean(*l, x.size(), [&](int64_t i) { return dy.data[i] * centered(i); });
  Value dx = Value::Zeros(instr.shape().tuple_shapes.at(0));
  std::vector<double> dscale(l->features), doffset(l->features);
  for (int64_t f = 0; f < l->features; ++f) {
    double n = static_cast<double>(l->per_feature);
    dscale[f] = mean_dyx[f] * n / std::sqrt(var.data[f] + eps);
    doffset[f] = mean_dy[f] * n;
  }
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t f = l->Feature(i);
    double ve = var.data[f] + eps;
    dx.data[i] = RoundTo(dx.type(), scale.data[f] / std::sqrt(ve) *
                                        (dy.data[i] - mean_dy[f] - centered(i) * mean_dyx[f] / ve));
  }
  return Value::Tuple({std::move(dx), Vec(instr.shape().tuple_shapes.at(1), dscale),
                       Vec(instr.shape().tuple_shapes.at(2), doffset)});
}

}  // namespace

void RegisterBatchNorm(OpTable& t) {
  t[static_cast<size_t>(Opcode::kBatchNormTraining)] = Training;
  t[static_cast<size_t>(Opcode::kBatchNormInference)] = Inference;
  t[static_cast<size_t>(Opcode::kBatchNormGrad)] = Grad;
}

}  // namespace tpusim::eval
