// The model builder: an XlaBuilder-like API that records a computation graph and prints it
// as an HLO module in XLA's text syntax (docs/models.md). Ops are free functions on `Op`
// handles, as in XLA's client API; each checks its operands and infers the result shape.
// Misuse (mismatched shapes, foreign handles) throws std::invalid_argument: it is a bug in
// the model code, never a user input error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/attributes.h"
#include "compiler/hlo/opcode.h"
#include "compiler/hlo/shape.h"

namespace tpusim::model {

using hlo::Opcode;
using hlo::PrimitiveType;
using hlo::Shape;

// The scalar function of a reduce, reduce-window, all-reduce or scatter.
enum class Reducer { kSum, kMax };

struct DotDims {
  std::vector<int64_t> lhs_batch{}, rhs_batch{}, lhs_contracting{}, rhs_contracting{};
};

// One graph node: an HLO instruction with the attributes the builder emits.
struct Node {
  Opcode opcode = Opcode::kParameter;
  Shape shape{};  // without layout; the printer adds the default row-major one
  std::vector<int> operands{};
  std::string name{};                    // printed as %name.id
  std::vector<int64_t> dims{};           // broadcast/reduce/transpose/reverse dims; iota dim
  DotDims dot{};                         // dot
  std::string dim_labels{};              // convolution
  std::vector<hlo::WindowDim> window{};  // convolution, reduce-window, select-and-scatter
  Reducer reducer = Reducer::kSum;       // reduce, reduce-window, all-reduce, scatter
  std::string direction{};               // compare: EQ, GE, ...
  double value = 0;                      // scalar constant
  int64_t index = 0;                     // parameter number, tuple index, feature_index
  double epsilon = 0;                    // batch norm
  std::vector<std::vector<int64_t>> replica_groups{};  // all-reduce
  bool stop_gradient = false;                          // autodiff treats the node as a constant
};

class Builder;

// A handle to a node of a Builder, like xla::XlaOp.
struct Op {
  Builder* builder = nullptr;
  int id = -1;
  bool valid() const { return builder != nullptr && id >= 0; }
  const Shape& shape() const;
  PrimitiveType type() const { return shape().type; }
  const std::vector<int64_t>& dims() const { return shape().dims; }
  int64_t dim(int64_t i) const { return dims().at(static_cast<size_t>(i)); }
  int64_t rank() const { return shape().rank(); }
};

class Builder {
 public:
  explicit Builder(std::string name) : name_(std::move(name)) {}
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int id) const { return nodes_.at(static_cast<size_t>(id)); }
  const Node& node(Op op) const;
  // Appends a node whose operands must belong to this builder; returns its handle.
  Op AddNode(Node node);
  // Autodiff sends no gradient through node `id` (see StopGradient).
  void MarkStopGradient(int id) { nodes_.at(static_cast<size_t>(id)).stop_gradient = true; }
  // Parameters in parameter-number order.
  const std::vector<int>& parameters() const { return parameters_; }

 private:
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<int> parameters_;
};

// Throws std::invalid_argument("model builder: " + what) unless `ok`.
void Check(bool ok, const std::string& what);
std::string ShapeText(const Shape& shape);  // "f32[2,3]" (no layout)

// Sources.
Op Parameter(Builder& b, Shape shape, std::string name);
Op ConstantScalar(Builder& b, PrimitiveType type, double value);
Op Full(Builder& b, PrimitiveType type, std::vector<int64_t> dims, double value);  // broadcast
Op FullLike(Op like, double value);
Op Iota(Builder& b, Shape shape, int64_t dimension);

// Elementwise. Binary operands have equal shapes (HLO has no implicit broadcasting).
Op Exp(Op x);
Op Log(Op x);
Op Neg(Op x);
Op Rsqrt(Op x);
Op Sqrt(Op x);
Op Tanh(Op x);
Op Add(Op a, Op b);
Op Sub(Op a, Op b);
Op Mul(Op a, Op b);
Op Div(Op a, Op b);
Op Max(Op a, Op b);
Op Pow(Op a, Op b);
Op Compare(Op a, Op b, std::string direction);  // EQ NE LT LE GT GE; pred result
Op Select(Op pred, Op on_true, Op on_false);
Op ConvertTo(Op x, PrimitiveType type);  // returns x itself when the type already matches
Op StopGradient(Op x);  // marks x itself: no use of x passes a gradient back through it

// Shapes.
// Operand dimension i becomes output dimension `mapping[i]` (XLA broadcast dimensions),
// increasing, each of the same size as the operand's.
Op Broadcast(Op x, std::vector<int64_t> out_dims, std::vector<int64_t> mapping);
Op BroadcastScalar(Op scalar, std::vector<int64_t> out_dims);
Op Reshape(Op x, std::vector<int64_t> dims);
Op Transpose(Op x, std::vector<int64_t> permutation);  // output dim i = input dim perm[i]
Op Reverse(Op x, std::vector<int64_t> dims);
Op Tuple(Builder& b, const std::vector<Op>& elements);
Op GetTupleElement(Op tuple, int64_t index);

// Operators for readable model code; a double operand becomes a constant of x's type.
Op operator+(Op a, Op b);
Op operator-(Op a, Op b);
Op operator*(Op a, Op b);
Op operator/(Op a, Op b);
Op operator-(Op a);
Op operator*(Op a, double s);
Op operator+(Op a, double s);

}  // namespace tpusim::model
