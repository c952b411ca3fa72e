// The reverse sweep: adjoints flow from the loss back to the requested nodes.
#include "compiler/model/autodiff.h"

#include "compiler/model/builder_ops.h"

namespace tpusim::model {

std::vector<Op> Gradients(Op loss, const std::vector<Op>& wrt) {
  Check(loss.valid() && loss.rank() == 0 && !loss.shape().IsTuple(), "loss must be a scalar");
  Builder& b = *loss.builder;
  const size_t count = static_cast<size_t>(loss.id) + 1;
  // depends[id]: the node's value changes with some node of `wrt`.
  std::vector<bool> depends(count, false);
  for (Op w : wrt) {
    Check(w.builder == &b, "gradient with respect to a node of another builder");
    if (static_cast<size_t>(w.id) < count) depends[static_cast<size_t>(w.id)] = true;
  }
  for (size_t id = 0; id < count; ++id) {
    const Node& n = b.node(static_cast<int>(id));
    if (n.stop_gradient) {
      depends[id] = false;
      continue;
    }
    for (int operand : n.operands)
      depends[id] = depends[id] || depends[static_cast<size_t>(operand)];
  }

  // adjoints[id][slot]: the gradient of the loss with respect to output slot `slot`.
  std::vector<std::vector<Op>> adjoints(count);
  auto slots = [&](size_t id) -> std::vector<Op>& {
    std::vector<Op>& s = adjoints[id];
    const Shape& shape = b.node(static_cast<int>(id)).shape;
    if (s.empty()) s.resize(shape.IsTuple() ? shape.tuple_shapes.size() : 1);
    return s;
  };
  auto add_to = [&](size_t id, int64_t slot, Op g) {
    Op& a = slots(id).at(static_cast<size_t>(slot));
    a = a.valid() ? Add(a, g) : g;
  };
  add_to(count - 1, 0, ConstantScalar(b, loss.type(), 1.0));

  for (size_t id = count; id-- > 0;) {
    if (!depends[id] || adjoints[id].empty()) continue;
    const Node n = b.node(static_cast<int>(id));  // a copy: rules append to the builder
    BackpropNode({
        .out = Op{&b, static_cast<int>(id)},
        .node = n,
        .adjoint = adjoints[id],
        .needs = [&](size_t i) { return depends[static_cast<size_t>(n.operands.at(i))]; },
        .accumulate = [&](size_t i, Op g) { add_to(static_cast<size_t>(n.operands.at(i)), 0, g); },
        .accumulate_slot = [&](int64_t slot,
                               Op g) { add_to(static_cast<size_t>(n.operands.at(0)), slot, g); },
    });
  }

  std::vector<Op> grads;
  for (Op w : wrt) {
    const size_t id = static_cast<size_t>(w.id);
    const bool has = id < count && !adjoints[id].empty() && adjoints[id][0].valid();
    grads.push_back(has ? adjoints[id][0] : FullLike(w, 0));
  }
  return grads;
}

}  // namespace tpusim::model
