// Optimizer updates as graph ops: plain SGD, SGD with momentum, Adam with a step count.
#pragma once

#include <string>
#include <vector>

#include "compiler/model/builder.h"

namespace tpusim::model {

enum class Optimizer { kSgd, kMomentum, kAdam };

std::string OptimizerName(Optimizer o);  // "sgd", "momentum", "adam"

struct OptimizerStep {
  std::vector<Op> new_weights;
  std::vector<Op> new_state;  // the same order as the state parameters
  std::vector<Op> state;      // the state parameters
};

// Declares the optimizer state parameters (after the existing ones) and builds the update:
//   sgd:      w -= lr g                                         (lr 0.01, no state)
//   momentum: v = mu v + g; w -= lr v                           (lr 0.1, mu 0.9; state v...)
//   adam:     t += 1; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//             w -= lr sqrt(1-b2^t)/(1-b1^t) m / (sqrt(v) + eps)  (Keras defaults lr 1e-3,
//             b1 0.9, b2 0.999, eps 1e-7; state m..., v..., t as s32[])
OptimizerStep ApplyOptimizer(Builder& b, Optimizer optimizer, const std::vector<Op>& weights,
                             const std::vector<Op>& gradients,
                             const std::vector<std::string>& weight_names);

}  // namespace tpusim::model
