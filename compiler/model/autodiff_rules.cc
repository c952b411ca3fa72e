// Gradient rules of the elementwise, shape, reduction, window, normalization and gather ops.
#include <string>

#include "compiler/model/autodiff.h"
#include "compiler/model/builder_ops.h"

namespace tpusim::model {
namespace {

Op Operand(const Backprop& s, size_t i) { return Op{s.out.builder, s.node.operands.at(i)}; }

// Dimensions of `rank` not listed in `dims` (which is sorted).
std::vector<int64_t> OtherDims(int64_t rank, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  size_t k = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (k < dims.size() && dims[k] == d) {
      ++k;
    } else {
      out.push_back(d);
    }
  }
  return out;
}

void Send(const Backprop& s, size_t i, const std::function<Op()>& gradient) {
  if (s.needs(i)) s.accumulate(i, gradient());
}

void BackpropElementwise(const Backprop& s, Op g) {
  const Op y = s.out;
  const Op a = Operand(s, 0);
  switch (s.node.opcode) {
    case Opcode::kAdd:
      Send(s, 0, [&] { return g; });
      Send(s, 1, [&] { return g; });
      return;
    case Opcode::kSubtract:
      Send(s, 0, [&] { return g; });
      Send(s, 1, [&] { return -g; });
      return;
    case Opcode::kMultiply:
      Send(s, 0, [&] { return g * Operand(s, 1); });
      Send(s, 1, [&] { return g * a; });
      return;
    case Opcode::kDivide:  // d(a/b)/db = -(a/b)/b
      Send(s, 0, [&] { return g / Operand(s, 1); });
      Send(s, 1, [&] { return -(g * y) / Operand(s, 1); });
      return;
    case Opcode::kMaximum: {
      // Against a bound that takes no gradient (ReLU's zero) the mask reads the output, as
      // TensorFlow's ReluGrad does (ties get no gradient), so the input need not be kept for
      // the backward pass. Otherwise ties go to the first operand.
      const Op first =
          s.needs(1) ? Compare(a, Operand(s, 1), "GE") : Compare(y, Operand(s, 1), "GT");
      const Op zero = FullLike(g, 0);
      Send(s, 0, [&] { return Select(first, g, zero); });
      Send(s, 1, [&] { return Select(first, zero, g); });
      return;
    }
    case Opcode::kNegate:
      return Send(s, 0, [&] { return -g; });
    case Opcode::kExp:
      return Send(s, 0, [&] { return g * y; });
    case Opcode::kLog:
      return Send(s, 0, [&] { return g / a; });
    case Opcode::kRsqrt:  // d(a^-1/2) = -1/2 a^-3/2 = -1/2 y / a
      return Send(s, 0, [&] { return (g * y) * -0.5 / a; });
    case Opcode::kSqrt:  // d(a^1/2) = 1/2 / y
      return Send(s, 0, [&] { return g * 0.5 / y; });
    case Opcode::kTanh:  // 1 - y^2
      return Send(s, 0, [&] { return g - g * y * y; });
    case Opcode::kSelect: {
      const Op zero = FullLike(g, 0);
      Send(s, 1, [&] { return Select(a, g, zero); });
      Send(s, 2, [&] { return Select(a, zero, g); });
      return;
    }
    case Opcode::kConvert:
      return Send(s, 0, [&] { return ConvertTo(g, a.type()); });
    default:
      Check(false, "no gradient rule for " + std::string(hlo::OpcodeName(s.node.opcode)));
  }
}

void BackpropShape(const Backprop& s, Op g) {
  const Node& n = s.node;
  const Op a = Operand(s, 0);
  switch (n.opcode) {
    case Opcode::kBroadcast:  // sum over the broadcast dimensions
      return Send(s, 0, [&] {
        const std::vector<int64_t> added = OtherDims(g.rank(), n.dims);
        return added.empty() ? Reshape(g, a.dims()) : ReduceSum(g, added);
      });
    case Opcode::kReshape:
      return Send(s, 0, [&] { return Reshape(g, a.dims()); });
    case Opcode::kTranspose:
      return Send(s, 0, [&] {
        std::vector<int64_t> inverse(n.dims.size());
        for (size_t i = 0; i < n.dims.size(); ++i)
          inverse[static_cast<size_t>(n.dims[i])] = int64_t(i);
        return Transpose(g, inverse);
      });
    case Opcode::kReverse:
      return Send(s, 0, [&] { return Reverse(g, n.dims); });
    case Opcode::kReduce:
      return Send(s, 0, [&] {
        const std::vector<int64_t> kept = OtherDims(a.rank(), n.dims);
        const Op spread = Broadcast(g, a.dims(), kept);
        if (n.reducer == Reducer::kSum) return spread;
        const Op is_max = Compare(a, Broadcast(s.out, a.dims(), kept), "EQ");  // ties: each
        return Select(is_max, spread, FullLike(a, 0));
      });
    case Opcode::kReduceWindow:  // max pool: to the window's first maximum
      return Send(s, 0, [&] { return SelectAndScatter(a, g, n.window); });
    case Opcode::kGather:
      return Send(s, 0, [&] { return ScatterAddRows(a.shape(), Operand(s, 1), g); });
    default:
      BackpropElementwise(s, g);
  }
}

}  // namespace

void BackpropNode(const Backprop& s) {
  const Node& n = s.node;
  switch (n.opcode) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kIota:
    case Opcode::kCompare:
      return;
    case Opcode::kTuple:
      for (size_t i = 0; i < s.adjoint.size(); ++i) {
        if (s.adjoint[i].valid() && s.needs(i)) s.accumulate(i, s.adjoint[i]);
      }
      return;
    case Opcode::kGetTupleElement:
      if (s.adjoint[0].valid()) s.accumulate_slot(n.index, s.adjoint[0]);
      return;
    case Opcode::kBatchNormTraining: {
      Check(!s.adjoint[1].valid() && !s.adjoint[2].valid(),
            "no gradient rule through batch-norm-training's mean and variance outputs");
      if (!s.adjoint[0].valid()) return;
      const Op grads = BatchNormGrad(Operand(s, 0), Operand(s, 1), GetTupleElement(s.out, 1),
                                     GetTupleElement(s.out, 2), s.adjoint[0], n.epsilon, n.index);
      for (size_t i = 0; i < 3; ++i) Send(s, i, [&] { return GetTupleElement(grads, int64_t(i)); });
      return;
    }
    case Opcode::kDot:
      return BackpropDot(s);
    case Opcode::kConvolution:
      return BackpropConvolution(s);
    default:
      if (s.adjoint[0].valid()) BackpropShape(s, s.adjoint[0]);
  }
}

}  // namespace tpusim::model
