// Every gradient rule of compiler/model checked against central finite differences through
// the reference evaluator, in f64 at tiny sizes.
#include <gtest/gtest.h>

#include <functional>

#include "compiler/model/builder_ops.h"
#include "compiler/model/gradcheck.h"

namespace tpusim::model {
namespace {

constexpr PrimitiveType kF64 = PrimitiveType::kF64;

// loss = sum(f(params) * probe), probe a random non-differentiated parameter, so every
// output element gets a different weight. Checks d loss / d params.
void ExpectGradientsMatch(const std::vector<std::vector<int64_t>>& param_dims,
                          const std::function<Op(const std::vector<Op>&)>& f,
                          const GradCheckOptions& options = {}) {
  Builder b("gradcheck");
  std::vector<Op> params;
  for (const auto& dims : param_dims) {
    params.push_back(Parameter(b, Shape::Array(kF64, dims), "p"));
  }
  Op y = f(params);
  Op probe = Parameter(b, y.shape(), "probe");
  std::vector<int64_t> all;
  for (int64_t d = 0; d < y.rank(); ++d) all.push_back(d);
  Op loss = ReduceSum(y * probe, all);
  hlo::Status st = CheckGradients(b, loss, params, RandomArguments(b, 7), options);
  EXPECT_TRUE(st.ok()) << st.message();
}

Op Positive(Op x) { return x * x + 0.5; }

TEST(ModelAutodiff, ElementwiseBinary) {
  ExpectGradientsMatch({{2, 3}, {2, 3}}, [](auto p) { return p[0] + p[1]; });
  ExpectGradientsMatch({{2, 3}, {2, 3}}, [](auto p) { return p[0] - p[1]; });
  ExpectGradientsMatch({{2, 3}, {2, 3}}, [](auto p) { return p[0] * p[1]; });
  ExpectGradientsMatch({{2, 3}, {2, 3}}, [](auto p) { return p[0] / Positive(p[1]); });
  ExpectGradientsMatch({{2, 3}, {2, 3}}, [](auto p) { return Max(p[0], p[1]); });
}

TEST(ModelAutodiff, ElementwiseUnary) {
  ExpectGradientsMatch({{5}}, [](auto p) { return Exp(p[0]); });
  ExpectGradientsMatch({{5}}, [](auto p) { return Log(Positive(p[0])); });
  ExpectGradientsMatch({{5}}, [](auto p) { return -p[0]; });
  ExpectGradientsMatch({{5}}, [](auto p) { return Rsqrt(Positive(p[0])); });
  ExpectGradientsMatch({{5}}, [](auto p) { return Sqrt(Positive(p[0])); });
  ExpectGradientsMatch({{5}}, [](auto p) { return Tanh(p[0]); });
}

TEST(ModelAutodiff, SelectCompareConvert) {
  ExpectGradientsMatch({{4}, {4}},
                       [](auto p) { return Select(Compare(p[0], p[1], "LT"), p[0], p[1] * p[1]); });
  // Through f32 the loss is quantized, so the step is large and the tolerance loose.
  ExpectGradientsMatch(
      {{3}}, [](auto p) { return Exp(ConvertTo(ConvertTo(p[0], PrimitiveType::kF32), kF64)); },
      {.step = 1e-2, .tolerance = 1e-4});
}

TEST(ModelAutodiff, ShapeOps) {
  ExpectGradientsMatch({{3}}, [](auto p) { return Broadcast(p[0], {2, 3, 4}, {1}); });
  ExpectGradientsMatch({{2, 6}}, [](auto p) { return Reshape(p[0], {3, 4}); });
  ExpectGradientsMatch({{2, 3, 4}}, [](auto p) { return Transpose(p[0], {2, 0, 1}); });
  ExpectGradientsMatch({{2, 3}}, [](auto p) { return Reverse(p[0], {1}); });
  ExpectGradientsMatch({{2, 3}, {3}}, [](auto p) {
    Op t = Tuple(*p[0].builder, {p[0], p[1]});
    return GetTupleElement(t, 0) * Broadcast(GetTupleElement(t, 1), {2, 3}, {1});
  });
}

TEST(ModelAutodiff, Reductions) {
  ExpectGradientsMatch({{2, 3, 4}}, [](auto p) { return ReduceSum(p[0], {0, 2}); });
  ExpectGradientsMatch({{3, 5}}, [](auto p) { return ReduceMax(p[0], {1}); });
  ExpectGradientsMatch({{1, 5, 5, 2}},
                       [](auto p) { return MaxPool(p[0], Window2D::Same(5, 5, 3, 2)); });
  ExpectGradientsMatch({{2, 4, 4, 1}}, [](auto p) { return MaxPool(p[0], Window2D::Valid(2, 2)); });
}

TEST(ModelAutodiff, Dot) {
  ExpectGradientsMatch({{3, 4}, {4, 2}}, [](auto p) { return MatMul(p[0], p[1]); });
  ExpectGradientsMatch({{2, 3, 4}, {4, 5}}, [](auto p) { return MatMul(p[0], p[1]); });
  // Batch dims and contracting dims in unusual positions: [b, k, m] x [n, b, k].
  ExpectGradientsMatch({{2, 3, 4}, {5, 2, 3}}, [](auto p) {
    return DotGeneral(
        p[0], p[1],
        {.lhs_batch = {0}, .rhs_batch = {1}, .lhs_contracting = {1}, .rhs_contracting = {2}});
  });
}

TEST(ModelAutodiff, Convolution) {
  // Stride 1 SAME, stride 2 SAME (odd and even sizes), VALID with leftover rows.
  ExpectGradientsMatch({{2, 5, 5, 3}, {3, 3, 3, 2}},
                       [](auto p) { return Conv2D(p[0], p[1], Window2D::Same(5, 5, 3, 1)); });
  ExpectGradientsMatch({{1, 6, 5, 2}, {3, 3, 2, 3}},
                       [](auto p) { return Conv2D(p[0], p[1], Window2D::Same(6, 5, 3, 2)); });
  ExpectGradientsMatch({{2, 6, 6, 2}, {1, 1, 2, 2}},
                       [](auto p) { return Conv2D(p[0], p[1], Window2D::Valid(1, 2)); });
  ExpectGradientsMatch({{1, 7, 7, 1}, {3, 3, 1, 2}},
                       [](auto p) { return Conv2D(p[0], p[1], Window2D::Valid(3, 3)); });
}

TEST(ModelAutodiff, BatchNormTraining) {
  ExpectGradientsMatch({{2, 3, 3, 4}, {4}, {4}}, [](auto p) {
    return GetTupleElement(BatchNormTraining(p[0], p[1], p[2], 1e-3, 3), 0);
  });
}

TEST(ModelAutodiff, GatherRows) {
  Builder b("gather");
  Op table = Parameter(b, Shape::Array(kF64, {5, 3}), "table");
  Op ids = Parameter(b, Shape::Array(PrimitiveType::kS32, {2, 3}), "ids");
  Op rows = GatherRows(table, ids);
  Op probe = Parameter(b, rows.shape(), "probe");
  Op loss = ReduceSum(rows * rows * probe, {0, 1, 2});
  std::vector<eval::Value> args = RandomArguments(b, 3);
  args[1] = eval::Value::FromVector(args[1].shape, {0, 4, 2, 4, 1, 0});  // repeats accumulate
  hlo::Status st = CheckGradients(b, loss, {table}, args, {.entries_per_parameter = 15});
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(ModelAutodiff, StopGradientAndUnusedParameter) {
  Builder b("stop");
  Op x = Parameter(b, Shape::Array(kF64, {3}), "x");
  Op unused = Parameter(b, Shape::Array(kF64, {2}), "unused");
  Op loss = ReduceSum(x * StopGradient(Exp(x)), {0});  // d/dx = exp(x) only
  hlo::Status st = CheckGradients(b, loss, {unused}, RandomArguments(b, 1));
  EXPECT_TRUE(st.ok()) << st.message();
}

}  // namespace
}  // namespace tpusim::model
