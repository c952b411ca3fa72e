// Graph bookkeeping, sources, elementwise and shape ops of the model builder.
#include "compiler/model/builder.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::model {

void Check(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("model builder: " + what);
}

std::string ShapeText(const Shape& shape) { return shape.ToString(/*with_layout=*/false); }

const Shape& Op::shape() const {
  Check(valid(), "use of an empty Op");
  return builder->node(id).shape;
}

const Node& Builder::node(Op op) const {
  Check(op.builder == this, "Op of another builder");
  return node(op.id);
}

Op Builder::AddNode(Node node) {
  for (int operand : node.operands) {
    Check(operand >= 0 && operand < static_cast<int>(nodes_.size()), "operand out of range");
  }
  const int id = static_cast<int>(nodes_.size());
  if (node.opcode == Opcode::kParameter) {
    node.index = static_cast<int64_t>(parameters_.size());
    parameters_.push_back(id);
  }
  if (node.name.empty()) node.name = std::string(hlo::OpcodeName(node.opcode));
  nodes_.push_back(std::move(node));
  return Op{this, id};
}

namespace {

Builder& SameBuilder(std::initializer_list<Op> ops) {
  Builder* b = ops.begin()->builder;
  for (Op op : ops) Check(op.valid() && op.builder == b, "operands of different builders");
  return *b;
}

Op Unary(Opcode opcode, Op x) {
  Check(hlo::IsFloatingType(x.type()), std::string(hlo::OpcodeName(opcode)) + " needs floats");
  Node n{.opcode = opcode, .shape = x.shape(), .operands = {x.id}};
  return x.builder->AddNode(std::move(n));
}

Op Binary(Opcode opcode, Op a, Op b) {
  Builder& builder = SameBuilder({a, b});
  Check(a.shape() == b.shape(), std::string(hlo::OpcodeName(opcode)) + " of " +
                                    ShapeText(a.shape()) + " and " + ShapeText(b.shape()));
  return builder.AddNode(Node{.opcode = opcode, .shape = a.shape(), .operands = {a.id, b.id}});
}

}  // namespace

Op Parameter(Builder& b, Shape shape, std::string name) {
  return b.AddNode(Node{.opcode = Opcode::kParameter, .shape = std::move(shape), .name = name});
}

Op ConstantScalar(Builder& b, PrimitiveType type, double value) {
  return b.AddNode(
      Node{.opcode = Opcode::kConstant, .shape = Shape::Array(type, {}), .value = value});
}

Op Full(Builder& b, PrimitiveType type, std::vector<int64_t> dims, double value) {
  Op scalar = ConstantScalar(b, type, value);
  return dims.empty() ? scalar : BroadcastScalar(scalar, std::move(dims));
}

Op FullLike(Op like, double value) { return Full(*like.builder, like.type(), like.dims(), value); }

Op Iota(Builder& b, Shape shape, int64_t dimension) {
  Check(dimension >= 0 && dimension < shape.rank(), "iota dimension out of range");
  return b.AddNode(Node{.opcode = Opcode::kIota, .shape = std::move(shape), .dims = {dimension}});
}

Op Exp(Op x) { return Unary(Opcode::kExp, x); }
Op Log(Op x) { return Unary(Opcode::kLog, x); }
Op Neg(Op x) { return Unary(Opcode::kNegate, x); }
Op Rsqrt(Op x) { return Unary(Opcode::kRsqrt, x); }
Op Sqrt(Op x) { return Unary(Opcode::kSqrt, x); }
Op Tanh(Op x) { return Unary(Opcode::kTanh, x); }
Op Add(Op a, Op b) { return Binary(Opcode::kAdd, a, b); }
Op Sub(Op a, Op b) { return Binary(Opcode::kSubtract, a, b); }
Op Mul(Op a, Op b) { return Binary(Opcode::kMultiply, a, b); }
Op Div(Op a, Op b) { return Binary(Opcode::kDivide, a, b); }
Op Max(Op a, Op b) { return Binary(Opcode::kMaximum, a, b); }
Op Pow(Op a, Op b) { return Binary(Opcode::kPower, a, b); }

Op Compare(Op a, Op b, std::string direction) {
  Builder& builder = SameBuilder({a, b});
  Check(a.shape() == b.shape(), "compare of different shapes");
  Node n{.opcode = Opcode::kCompare,
         .shape = Shape::Array(PrimitiveType::kPred, a.dims()),
         .operands = {a.id, b.id},
         .direction = std::move(direction)};
  return builder.AddNode(std::move(n));
}

Op Select(Op pred, Op on_true, Op on_false) {
  Builder& builder = SameBuilder({pred, on_true, on_false});
  Check(pred.type() == PrimitiveType::kPred && pred.dims() == on_true.dims() &&
            on_true.shape() == on_false.shape(),
        "select needs pred[dims] and two equal shapes");
  return builder.AddNode(Node{.opcode = Opcode::kSelect,
                              .shape = on_true.shape(),
                              .operands = {pred.id, on_true.id, on_false.id}});
}

Op ConvertTo(Op x, PrimitiveType type) {
  if (x.type() == type) return x;
  Node n{.opcode = Opcode::kConvert, .shape = Shape::Array(type, x.dims()), .operands = {x.id}};
  return x.builder->AddNode(std::move(n));
}

Op StopGradient(Op x) {
  Check(x.valid(), "stop-gradient of an empty Op");
  x.builder->MarkStopGradient(x.id);
  return x;
}

Op Broadcast(Op x, std::vector<int64_t> out_dims, std::vector<int64_t> mapping) {
  Check(static_cast<int64_t>(mapping.size()) == x.rank(), "broadcast mapping rank");
  for (size_t i = 0; i < mapping.size(); ++i) {
    Check(mapping[i] >= 0 && mapping[i] < static_cast<int64_t>(out_dims.size()) &&
              out_dims[mapping[i]] == x.dims()[i] && (i == 0 || mapping[i] > mapping[i - 1]),
          "broadcast of " + ShapeText(x.shape()) + ": bad dimension mapping");
  }
  Node n{.opcode = Opcode::kBroadcast,
         .shape = Shape::Array(x.type(), std::move(out_dims)),
         .operands = {x.id},
         .dims = std::move(mapping)};
  return x.builder->AddNode(std::move(n));
}

Op BroadcastScalar(Op scalar, std::vector<int64_t> out_dims) {
  Check(scalar.rank() == 0, "BroadcastScalar of a non-scalar");
  return Broadcast(scalar, std::move(out_dims), {});
}

Op Reshape(Op x, std::vector<int64_t> dims) {
  Shape out = Shape::Array(x.type(), std::move(dims));
  Check(out.ElementCount() == x.shape().ElementCount(),
        "reshape of " + ShapeText(x.shape()) + " to " + ShapeText(out));
  if (out.dims == x.dims()) return x;
  return x.builder->AddNode(Node{.opcode = Opcode::kReshape, .shape = out, .operands = {x.id}});
}

Op Transpose(Op x, std::vector<int64_t> permutation) {
  Check(static_cast<int64_t>(permutation.size()) == x.rank(), "transpose permutation rank");
  std::vector<int64_t> dims;
  for (int64_t p : permutation) dims.push_back(x.dims().at(static_cast<size_t>(p)));
  std::vector<int64_t> sorted = permutation;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) Check(sorted[i] == int64_t(i), "not a permutation");
  Node n{.opcode = Opcode::kTranspose,
         .shape = Shape::Array(x.type(), dims),
         .operands = {x.id},
         .dims = std::move(permutation)};
  return x.builder->AddNode(std::move(n));
}

Op Reverse(Op x, std::vector<int64_t> dims) {
  Node n{
      .opcode = Opcode::kReverse, .shape = x.shape(), .operands = {x.id}, .dims = std::move(dims)};
  return x.builder->AddNode(std::move(n));
}

Op Tuple(Builder& b, const std::vector<Op>& elements) {
  std::vector<Shape> shapes;
  std::vector<int> ids;
  for (Op e : elements) {
    Check(e.builder == &b, "tuple element of another builder");
    shapes.push_back(e.shape());
    ids.push_back(e.id);
  }
  return b.AddNode(Node{.opcode = Opcode::kTuple, .shape = Shape::Tuple(shapes), .operands = ids});
}

Op GetTupleElement(Op tuple, int64_t index) {
  Check(tuple.shape().IsTuple() && index >= 0 &&
            index < static_cast<int64_t>(tuple.shape().tuple_shapes.size()),
        "get-tuple-element index out of range");
  Node n{.opcode = Opcode::kGetTupleElement,
         .shape = tuple.shape().tuple_shapes[static_cast<size_t>(index)],
         .operands = {tuple.id},
         .index = index};
  return tuple.builder->AddNode(std::move(n));
}

Op operator+(Op a, Op b) { return Add(a, b); }
Op operator-(Op a, Op b) { return Sub(a, b); }
Op operator*(Op a, Op b) { return Mul(a, b); }
Op operator/(Op a, Op b) { return Div(a, b); }
Op operator-(Op a) { return Neg(a); }
Op operator*(Op a, double s) { return Mul(a, FullLike(a, s)); }
Op operator+(Op a, double s) { return Add(a, FullLike(a, s)); }

}  // namespace tpusim::model
