// Reductions, windows, contractions, batch norm, gathers and all-reduce of the model builder.
#include "compiler/model/builder_ops.h"

#include <algorithm>
#include <limits>

namespace tpusim::model {
namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();  // identity of max

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Output size of one windowed dimension (XLA's formula with dilations).
int64_t WindowedSize(int64_t in, const hlo::WindowDim& w) {
  const int64_t dilated_in = in == 0 ? 0 : (in - 1) * w.lhs_dilate + 1;
  const int64_t dilated_window = (w.size - 1) * w.rhs_dilate + 1;
  const int64_t span = dilated_in + w.pad_low + w.pad_high - dilated_window;
  Check(span >= 0, "window larger than the padded input");
  return span / w.stride + 1;
}

std::vector<hlo::WindowDim> SpatialWindow(const Window2D& w) {
  return {{.size = w.size_h, .stride = w.stride_h, .pad_low = w.pad_top, .pad_high = w.pad_bottom},
          {.size = w.size_w, .stride = w.stride_w, .pad_low = w.pad_left, .pad_high = w.pad_right}};
}

// A window over NHWC: size-1 windows on the batch and feature dimensions.
std::vector<hlo::WindowDim> NhwcWindow(const Window2D& w) {
  std::vector<hlo::WindowDim> spatial = SpatialWindow(w);
  return {hlo::WindowDim{}, spatial[0], spatial[1], hlo::WindowDim{}};
}

}  // namespace

Window2D Window2D::Same(int64_t in_h, int64_t in_w, int64_t size, int64_t stride) {
  auto pads = [&](int64_t in) {
    const int64_t out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((out - 1) * stride + size - in, 0);
    return std::pair<int64_t, int64_t>{total / 2, total - total / 2};
  };
  auto [top, bottom] = pads(in_h);
  auto [left, right] = pads(in_w);
  return {size, size, stride, stride, top, bottom, left, right};
}

Window2D Window2D::Valid(int64_t size, int64_t stride) {
  return {size, size, stride, stride, 0, 0, 0, 0};
}

Op Reduce(Op x, Reducer reducer, std::vector<int64_t> dims) {
  std::sort(dims.begin(), dims.end());
  std::vector<int64_t> out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!Contains(dims, d)) out.push_back(x.dim(d));
  }
  for (int64_t d : dims) Check(d >= 0 && d < x.rank(), "reduce dimension out of range");
  Op init = ConstantScalar(*x.builder, x.type(), reducer == Reducer::kSum ? 0.0 : kMinusInf);
  Node n{.opcode = Opcode::kReduce,
         .shape = Shape::Array(x.type(), out),
         .operands = {x.id, init.id},
         .dims = std::move(dims),
         .reducer = reducer};
  return x.builder->AddNode(std::move(n));
}

Op ReduceSum(Op x, std::vector<int64_t> dims) { return Reduce(x, Reducer::kSum, std::move(dims)); }
Op ReduceMax(Op x, std::vector<int64_t> dims) { return Reduce(x, Reducer::kMax, std::move(dims)); }

Op MaxPool(Op x, const Window2D& window) {
  Check(x.rank() == 4, "MaxPool needs NHWC");
  std::vector<hlo::WindowDim> w = NhwcWindow(window);
  std::vector<int64_t> out;
  for (int64_t d = 0; d < 4; ++d) out.push_back(WindowedSize(x.dim(d), w[d]));
  Op init = ConstantScalar(*x.builder, x.type(), kMinusInf);
  Node n{.opcode = Opcode::kReduceWindow,
         .shape = Shape::Array(x.type(), out),
         .operands = {x.id, init.id},
         .window = std::move(w),
         .reducer = Reducer::kMax};
  return x.builder->AddNode(std::move(n));
}

Op SelectAndScatter(Op operand, Op source, const std::vector<hlo::WindowDim>& window) {
  Check(operand.builder == source.builder && operand.type() == source.type(),
        "select-and-scatter operands");
  Op init = ConstantScalar(*operand.builder, operand.type(), 0);
  Node n{.opcode = Opcode::kSelectAndScatter,
         .shape = operand.shape(),
         .operands = {operand.id, source.id, init.id},
         .window = window};
  return operand.builder->AddNode(std::move(n));
}

Op DotGeneral(Op lhs, Op rhs, DotDims dims, std::optional<PrimitiveType> result_type) {
  Check(lhs.builder == rhs.builder && lhs.type() == rhs.type(), "dot operands");
  Check(dims.lhs_batch.size() == dims.rhs_batch.size() &&
            dims.lhs_contracting.size() == dims.rhs_contracting.size(),
        "dot dimension numbers");
  std::vector<int64_t> out;
  for (size_t k = 0; k < dims.lhs_batch.size(); ++k) {
    Check(lhs.dim(dims.lhs_batch[k]) == rhs.dim(dims.rhs_batch[k]), "dot batch sizes differ");
    out.push_back(lhs.dim(dims.lhs_batch[k]));
  }
  for (size_t k = 0; k < dims.lhs_contracting.size(); ++k) {
    Check(lhs.dim(dims.lhs_contracting[k]) == rhs.dim(dims.rhs_contracting[k]),
          "dot of " + ShapeText(lhs.shape()) + " and " + ShapeText(rhs.shape()) +
              ": contracting sizes differ");
  }
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (!Contains(dims.lhs_batch, d) && !Contains(dims.lhs_contracting, d))
      out.push_back(lhs.dim(d));
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (!Contains(dims.rhs_batch, d) && !Contains(dims.rhs_contracting, d))
      out.push_back(rhs.dim(d));
  }
  Node n{.opcode = Opcode::kDot,
         .shape = Shape::Array(result_type.value_or(lhs.type()), out),
         .operands = {lhs.id, rhs.id},
         .dot = std::move(dims)};
  return lhs.builder->AddNode(std::move(n));
}

Op MatMul(Op x, Op w, std::optional<PrimitiveType> result_type) {
  Check(w.rank() == 2 && x.rank() >= 1, "MatMul needs x[.., K] and w[K, N]");
  return DotGeneral(x, w, {.lhs_contracting = {x.rank() - 1}, .rhs_contracting = {0}}, result_type);
}

Op ConvGeneral(Op input, Op kernel, std::vector<hlo::WindowDim> window, std::string dim_labels,
               std::vector<int64_t> out_dims, std::optional<PrimitiveType> result_type) {
  Check(input.builder == kernel.builder && input.type() == kernel.type(), "convolution operands");
  Node n{.opcode = Opcode::kConvolution,
         .shape = Shape::Array(result_type.value_or(input.type()), std::move(out_dims)),
         .operands = {input.id, kernel.id},
         .dim_labels = std::move(dim_labels),
         .window = std::move(window)};
  return input.builder->AddNode(std::move(n));
}

Op Conv2D(Op input, Op kernel, const Window2D& window, std::optional<PrimitiveType> result_type) {
  Check(input.rank() == 4 && kernel.rank() == 4 && input.dim(3) == kernel.dim(2),
        "Conv2D needs NHWC input and HWIO kernel with matching features");
  Check(kernel.dim(0) == window.size_h && kernel.dim(1) == window.size_w, "kernel vs window");
  std::vector<hlo::WindowDim> w = SpatialWindow(window);
  std::vector<int64_t> out = {input.dim(0), WindowedSize(input.dim(1), w[0]),
                              WindowedSize(input.dim(2), w[1]), kernel.dim(3)};
  return ConvGeneral(input, kernel, std::move(w), "b01f_01io->b01f", std::move(out), result_type);
}

Op BatchNormTraining(Op x, Op scale, Op offset, double epsilon, int64_t feature_index) {
  const std::vector<int64_t> features = {x.dim(feature_index)};
  Check(scale.dims() == features && offset.dims() == features, "batch norm scale/offset");
  Shape stat = Shape::Array(x.type(), features);
  Node n{.opcode = Opcode::kBatchNormTraining,
         .shape = Shape::Tuple({x.shape(), stat, stat}),
         .operands = {x.id, scale.id, offset.id},
         .index = feature_index,
         .epsilon = epsilon};
  return x.builder->AddNode(std::move(n));
}

Op BatchNormGrad(Op x, Op scale, Op mean, Op variance, Op grad_y, double epsilon,
                 int64_t feature_index) {
  Check(grad_y.shape() == x.shape(), "batch-norm-grad d_y shape");
  Shape stat = scale.shape();
  Node n{.opcode = Opcode::kBatchNormGrad,
         .shape = Shape::Tuple({x.shape(), stat, stat}),
         .operands = {x.id, scale.id, mean.id, variance.id, grad_y.id},
         .index = feature_index,
         .epsilon = epsilon};
  return x.builder->AddNode(std::move(n));
}

Op GatherRows(Op table, Op indices) {
  Check(table.rank() == 2 && indices.type() == PrimitiveType::kS32, "GatherRows operands");
  std::vector<int64_t> out = indices.dims();
  out.push_back(table.dim(1));
  Node n{.opcode = Opcode::kGather,
         .shape = Shape::Array(table.type(), out),
         .operands = {table.id, indices.id}};
  return table.builder->AddNode(std::move(n));
}

Op ScatterAddRows(Shape table_shape, Op indices, Op updates) {
  std::vector<int64_t> want = indices.dims();
  want.push_back(table_shape.dims.at(1));
  Check(updates.dims() == want && updates.type() == table_shape.type, "ScatterAddRows shapes");
  Op zeros = Full(*updates.builder, table_shape.type, table_shape.dims, 0);
  Node n{.opcode = Opcode::kScatter,
         .shape = table_shape,
         .operands = {zeros.id, indices.id, updates.id},
         .reducer = Reducer::kSum};
  return updates.builder->AddNode(std::move(n));
}

Op AllReduceSum(Builder& b, const std::vector<Op>& operands,
                std::vector<std::vector<int64_t>> replica_groups) {
  Check(!operands.empty(), "all-reduce of nothing");
  std::vector<Shape> shapes;
  std::vector<int> ids;
  for (Op op : operands) {
    Check(op.builder == &b && op.type() == operands[0].type(),
          "all-reduce operands share one reducer, so one element type");
    shapes.push_back(op.shape());
    ids.push_back(op.id);
  }
  Node n{.opcode = Opcode::kAllReduce,
         .shape = shapes.size() == 1 ? shapes[0] : Shape::Tuple(shapes),
         .operands = ids,
         .reducer = Reducer::kSum,
         .replica_groups = std::move(replica_groups)};
  return b.AddNode(std::move(n));
}

}  // namespace tpusim::model
