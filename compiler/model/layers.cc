// Layers of the models: dense, convolution, activations, normalizations, softmax, loss.
#include "compiler/model/layers.h"

#include <cmath>
#include <numbers>

namespace tpusim::model {

PrimitiveType ModelContext::master_type() const {
  return config_.dtype == PrimitiveType::kF64 ? PrimitiveType::kF64 : PrimitiveType::kF32;
}

PrimitiveType ModelContext::accumulate_type() const { return master_type(); }

Op ModelContext::Input(const std::string& name, PrimitiveType type, std::vector<int64_t> dims) {
  return Parameter(b_, Shape::Array(type, std::move(dims)), name);
}

Op ModelContext::Labels(std::vector<int64_t> dims) {
  if (!config_.train) return Op{};
  return Input("labels", PrimitiveType::kS32, std::move(dims));
}

Op ModelContext::Weight(const std::string& name, std::vector<int64_t> dims) {
  Op w = Parameter(b_, Shape::Array(master_type(), std::move(dims)), name);
  weights_.push_back(w);
  return ConvertTo(w, config_.dtype);
}

Op Dense(ModelContext& ctx, Op x, int64_t out, const std::string& name, bool bias) {
  Op w = ctx.Weight(name + "_kernel", {x.dim(x.rank() - 1), out});
  Op y = ConvertTo(MatMul(x, w, ctx.accumulate_type()), ctx.dtype());
  if (!bias) return y;
  Op b = ctx.Weight(name + "_bias", {out});
  return y + Broadcast(b, y.dims(), {y.rank() - 1});
}

Op Conv(ModelContext& ctx, Op x, int64_t filters, int64_t size, int64_t stride,
        const std::string& name, bool bias, bool same_padding) {
  Op k = ctx.Weight(name + "_kernel", {size, size, x.dim(3), filters});
  Window2D window = same_padding ? Window2D::Same(x.dim(1), x.dim(2), size, stride)
                                 : Window2D::Valid(size, stride);
  Op y = ConvertTo(Conv2D(x, k, window, ctx.accumulate_type()), ctx.dtype());
  if (!bias) return y;
  Op b = ctx.Weight(name + "_bias", {filters});
  return y + Broadcast(b, y.dims(), {3});
}

Op Relu(Op x) { return Max(x, FullLike(x, 0)); }

Op Gelu(Op x) {
  const double kSqrt2OverPi = std::sqrt(2 / std::numbers::pi);
  constexpr double kCubic = 0.044715;  // Hendrycks & Gimpel's tanh fit
  Op inner = (x + x * x * x * kCubic) * kSqrt2OverPi;
  return x * (Tanh(inner) + 1.0) * 0.5;
}

Op BatchNorm(ModelContext& ctx, Op x, const std::string& name) {
  constexpr double kEpsilon = 1e-3;  // Keras BatchNormalization default
  const int64_t features = x.dim(3);
  Op scale = ctx.Weight(name + "_gamma", {features});
  Op offset = ctx.Weight(name + "_beta", {features});
  const PrimitiveType m = ctx.master_type();
  Op bn = BatchNormTraining(ConvertTo(x, m), ConvertTo(scale, m), ConvertTo(offset, m), kEpsilon,
                            /*feature_index=*/3);
  return ConvertTo(GetTupleElement(bn, 0), ctx.dtype());
}

Op LayerNorm(ModelContext& ctx, Op x, const std::string& name) {
  constexpr double kEpsilon = 1e-12;  // BERT's layer_norm_eps
  const int64_t last = x.rank() - 1, width = x.dim(last);
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < last; ++d) kept.push_back(d);
  Op gamma = ctx.Weight(name + "_gamma", {width});
  Op beta = ctx.Weight(name + "_beta", {width});
  const PrimitiveType m = ctx.master_type();
  Op xm = ConvertTo(x, m);
  Op mean = Broadcast(ReduceSum(xm, {last}) * (1.0 / double(width)), xm.dims(), kept);
  Op centered = xm - mean;
  Op variance = ReduceSum(centered * centered, {last}) * (1.0 / double(width));
  Op normalized = centered * Broadcast(Rsqrt(variance + kEpsilon), xm.dims(), kept);
  Op y = normalized * Broadcast(ConvertTo(gamma, m), xm.dims(), {last}) +
         Broadcast(ConvertTo(beta, m), xm.dims(), {last});
  return ConvertTo(y, ctx.dtype());
}

Op Softmax(Op x) {
  const int64_t last = x.rank() - 1;
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < last; ++d) kept.push_back(d);
  Op shift = StopGradient(ReduceMax(x, {last}));
  Op e = Exp(x - Broadcast(shift, x.dims(), kept));
  return e / Broadcast(ReduceSum(e, {last}), x.dims(), kept);
}

Op SoftmaxCrossEntropySum(Op logits, Op labels, PrimitiveType type) {
  Check(logits.rank() == 2 && labels.dims() == std::vector<int64_t>{logits.dim(0)},
        "cross-entropy needs logits [N, C] and labels s32[N]");
  Builder& b = *logits.builder;
  Op z = ConvertTo(logits, type);
  // log softmax = z - max - log(sum(exp(z - max))); the max cancels in the gradient.
  Op shifted = z - Broadcast(StopGradient(ReduceMax(z, {1})), z.dims(), {0});
  Op log_sum = Log(ReduceSum(Exp(shifted), {1}));
  Op classes = Iota(b, Shape::Array(PrimitiveType::kS32, z.dims()), 1);
  Op one_hot = Compare(Broadcast(labels, z.dims(), {0}), classes, "EQ");
  Op picked = ReduceSum(Select(one_hot, shifted, FullLike(shifted, 0)), {1});
  return ReduceSum(log_sum - picked, {0});
}

}  // namespace tpusim::model
