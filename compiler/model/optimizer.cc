// SGD, momentum and Adam updates.
#include "compiler/model/optimizer.h"

namespace tpusim::model {
namespace {

constexpr double kSgdLearningRate = 0.01;
constexpr double kMomentumLearningRate = 0.1;  // Goyal et al. ResNet-50 base rate
constexpr double kMomentum = 0.9;
constexpr double kAdamLearningRate = 1e-3;  // Keras Adam defaults
constexpr double kAdamBeta1 = 0.9;
constexpr double kAdamBeta2 = 0.999;
constexpr double kAdamEpsilon = 1e-7;

Op Scalar(Builder& b, PrimitiveType t, double v) { return ConstantScalar(b, t, v); }

}  // namespace

std::string OptimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return "sgd";
    case Optimizer::kMomentum:
      return "momentum";
    case Optimizer::kAdam:
      return "adam";
  }
  return "?";
}

OptimizerStep ApplyOptimizer(Builder& b, Optimizer optimizer, const std::vector<Op>& weights,
                             const std::vector<Op>& gradients,
                             const std::vector<std::string>& weight_names) {
  Check(weights.size() == gradients.size() && weights.size() == weight_names.size(),
        "optimizer: one gradient and name per weight");
  OptimizerStep step;
  if (optimizer == Optimizer::kSgd) {
    for (size_t i = 0; i < weights.size(); ++i) {
      step.new_weights.push_back(weights[i] - gradients[i] * kSgdLearningRate);
    }
    return step;
  }
  if (optimizer == Optimizer::kMomentum) {
    for (size_t i = 0; i < weights.size(); ++i) {
      Op v = Parameter(b, weights[i].shape(), weight_names[i] + "_momentum");
      step.state.push_back(v);
      Op new_v = v * kMomentum + gradients[i];
      step.new_weights.push_back(weights[i] - new_v * kMomentumLearningRate);
      step.new_state.push_back(new_v);
    }
    return step;
  }
  std::vector<Op> ms, vs;
  for (size_t i = 0; i < weights.size(); ++i) {
    ms.push_back(Parameter(b, weights[i].shape(), weight_names[i] + "_adam_m"));
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    vs.push_back(Parameter(b, weights[i].shape(), weight_names[i] + "_adam_v"));
  }
  Op count = Parameter(b, Shape::Array(PrimitiveType::kS32, {}), "adam_step");
  Op new_count = count + Scalar(b, PrimitiveType::kS32, 1);
  // One scalar rate for all weights (they share the master type): lr sqrt(1-b2^t)/(1-b1^t).
  const PrimitiveType t = weights.empty() ? PrimitiveType::kF32 : weights[0].type();
  Op steps = ConvertTo(new_count, t);
  Op one = Scalar(b, t, 1);
  Op bias1 = one - Pow(Scalar(b, t, kAdamBeta1), steps);
  Op bias2 = one - Pow(Scalar(b, t, kAdamBeta2), steps);
  Op rate = Sqrt(bias2) / bias1 * kAdamLearningRate;
  std::vector<Op> new_ms, new_vs;
  for (size_t i = 0; i < weights.size(); ++i) {
    Check(weights[i].type() == t, "adam: weights of different types");
    Op g = gradients[i];
    Op m = ms[i] * kAdamBeta1 + g * (1 - kAdamBeta1);
    Op v = vs[i] * kAdamBeta2 + g * g * (1 - kAdamBeta2);
    Op update = m / (Sqrt(v) + kAdamEpsilon) * BroadcastScalar(rate, weights[i].dims());
    step.new_weights.push_back(weights[i] - update);
    new_ms.push_back(m);
    new_vs.push_back(v);
  }
  step.state = ms;
  step.state.insert(step.state.end(), vs.begin(), vs.end());
  step.state.push_back(count);
  step.new_state = new_ms;
  step.new_state.insert(step.new_state.end(), new_vs.begin(), new_vs.end());
  step.new_state.push_back(new_count);
  return step;
}

}  // namespace tpusim::model
