// Reverse-mode automatic differentiation over a Builder's graph (docs/models.md lists the
// gradient rules). The backward graph is appended to the same builder.
#pragma once

#include <functional>
#include <vector>

#include "compiler/model/builder.h"

namespace tpusim::model {

// Gradients of the scalar `loss` with respect to each node of `wrt`, each of that node's
// shape (zeros when the loss does not depend on it). Nodes marked StopGradient pass no
// gradient. Throws std::invalid_argument for an op without a gradient rule on the path.
std::vector<Op> Gradients(Op loss, const std::vector<Op>& wrt);

// One node's backward step (autodiff_rules.cc): given the adjoint of each output slot
// (`adjoint[0]` for arrays, one per element for tuples; invalid Ops when none), sends the
// adjoint of each operand that `needs` one to `accumulate(operand_index, gradient)`, or for a
// get-tuple-element to `accumulate_slot(tuple slot, gradient)`.
struct Backprop {
  Op out;
  const Node& node;
  const std::vector<Op>& adjoint;
  std::function<bool(size_t operand_index)> needs;
  std::function<void(size_t operand_index, Op gradient)> accumulate;
  std::function<void(int64_t slot, Op gradient)> accumulate_slot;
};
void BackpropNode(const Backprop& step);

// The parts of BackpropNode for dot and convolution (autodiff_contraction.cc).
void BackpropDot(const Backprop& step);
void BackpropConvolution(const Backprop& step);

}  // namespace tpusim::model
