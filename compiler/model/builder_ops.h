// Reductions, windows, contractions, normalization, gathers and collectives of the model
// builder (see builder.h for the conventions).
#pragma once

#include <optional>

#include "compiler/model/builder.h"

namespace tpusim::model {

// A 2-D window: size, stride and padding (low, high) per spatial dimension.
struct Window2D {
  int64_t size_h = 1, size_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  // XLA's "SAME" padding for input rows/cols `in_h`, `in_w`.
  static Window2D Same(int64_t in_h, int64_t in_w, int64_t size, int64_t stride);
  static Window2D Valid(int64_t size, int64_t stride);
};

// Sum or max over `dims`; the result keeps the other dimensions in order.
Op Reduce(Op x, Reducer reducer, std::vector<int64_t> dims);
Op ReduceSum(Op x, std::vector<int64_t> dims);
Op ReduceMax(Op x, std::vector<int64_t> dims);
// Max pool over the spatial dimensions of NHWC `x` (padding counts as -inf).
Op MaxPool(Op x, const Window2D& window);
// The gradient of MaxPool: `source` (the pooled gradient) scattered onto the positions
// `operand`'s windows select (first maximum, GE), summed; zeros elsewhere.
Op SelectAndScatter(Op operand, Op source, const std::vector<hlo::WindowDim>& window);

// dot with general dimension numbers. The result type is `result_type` when given
// (e.g. f32 accumulation of bf16 operands), else the operands' type.
Op DotGeneral(Op lhs, Op rhs, DotDims dims, std::optional<PrimitiveType> result_type = {});
// [.., K] x [K, N] -> [.., N]: contracts the last dimension of x with the first of w.
Op MatMul(Op x, Op w, std::optional<PrimitiveType> result_type = {});
// Convolution with explicit window dims (size, stride, padding, dilations) and dim_labels.
Op ConvGeneral(Op input, Op kernel, std::vector<hlo::WindowDim> window, std::string dim_labels,
               std::vector<int64_t> out_dims, std::optional<PrimitiveType> result_type = {});
// NHWC input, HWIO kernel, dim_labels=b01f_01io->b01f.
Op Conv2D(Op input, Op kernel, const Window2D& window,
          std::optional<PrimitiveType> result_type = {});

// batch-norm-training over every dimension but `feature_index`: a tuple of
// (normalized, batch mean, batch variance). scale/offset are [features].
Op BatchNormTraining(Op x, Op scale, Op offset, double epsilon, int64_t feature_index);
// batch-norm-grad: (d_x, d_scale, d_offset) from x, scale, mean, variance and d_y.
Op BatchNormGrad(Op x, Op scale, Op mean, Op variance, Op grad_y, double epsilon,
                 int64_t feature_index);

// Rows of the 2-D `table` selected by s32 `indices` of any shape: indices.dims + [cols].
Op GatherRows(Op table, Op indices);
// The adjoint of GatherRows: a table of `table_shape` holding the sum of the `updates`
// rows (indices.dims + [cols]) sent to each row index.
Op ScatterAddRows(Shape table_shape, Op indices, Op updates);

// Cross-replica sum of every operand in one all-reduce (a tuple when more than one).
Op AllReduceSum(Builder& b, const std::vector<Op>& operands,
                std::vector<std::vector<int64_t>> replica_groups);

}  // namespace tpusim::model
