// The model builder's API and its HLO text: exact emission of a small module, shape checks,
// statistics, and that every op the builder has evaluates as the text says.
#include <gtest/gtest.h>

#include <sstream>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/model/builder_ops.h"
#include "compiler/model/emit.h"
#include "compiler/model/models.h"

namespace tpusim::model {
namespace {

using hlo::PrimitiveType;

TEST(ModelBuilder, EmitsXlaText) {
  Builder b("tiny");
  Op x = Parameter(b, Shape::Array(PrimitiveType::kF32, {2, 3}), "x");
  Op w = Parameter(b, Shape::Array(PrimitiveType::kF32, {3}), "w");
  Op y = Relu(x * Broadcast(w, {2, 3}, {1}));
  Op total = AllReduceSum(b, {ReduceSum(y, {1})}, {{0, 1}});
  const std::string text = EmitModule(b, total, {.replica_count = 2, .donations = {}});
  EXPECT_EQ(text,
            "HloModule tiny, entry_computation_layout={(f32[2,3]{1,0}, f32[3]{0})->f32[2]{0}}, "
            "replica_count=2\n\n"
            "%sum.f32 (x: f32[], y: f32[]) -> f32[] {\n"
            "  %x = f32[] parameter(0)\n"
            "  %y = f32[] parameter(1)\n"
            "  ROOT %r = f32[] add(%x, %y)\n"
            "}\n\n"
            "ENTRY %main (x.0: f32[2,3], w.1: f32[3]) -> f32[2] {\n"
            "  %x.0 = f32[2,3]{1,0} parameter(0)\n"
            "  %w.1 = f32[3]{0} parameter(1)\n"
            "  %broadcast.2 = f32[2,3]{1,0} broadcast(%w.1), dimensions={1}\n"
            "  %multiply.3 = f32[2,3]{1,0} multiply(%x.0, %broadcast.2)\n"
            "  %constant.4 = f32[] constant(0)\n"
            "  %broadcast.5 = f32[2,3]{1,0} broadcast(%constant.4), dimensions={}\n"
            "  %maximum.6 = f32[2,3]{1,0} maximum(%multiply.3, %broadcast.5)\n"
            "  %constant.7 = f32[] constant(0)\n"
            "  %reduce.8 = f32[2]{0} reduce(%maximum.6, %constant.7), dimensions={1}, "
            "to_apply=%sum.f32\n"
            "  ROOT %all-reduce.9 = f32[2]{0} all-reduce(%reduce.8), channel_id=1, "
            "replica_groups={{0,1}}, to_apply=%sum.f32\n"
            "}\n");
  auto module = hlo::ParseHlo(text);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_TRUE(hlo::VerifyModule(*module).ok());
  auto out = eval::EvaluateReplicated(
      *module, {{eval::Value::FromVector(PrimitiveType::kF32, {2, 3}, {1, -2, 3, 4, 5, -6}),
                 eval::Value::FromVector(PrimitiveType::kF32, {3}, {1, 1, 1})},
                {eval::Value::FromVector(PrimitiveType::kF32, {2, 3}, {0, 0, 1, 0, 0, 0}),
                 eval::Value::FromVector(PrimitiveType::kF32, {3}, {2, 2, 2})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[1][0].data, (std::vector<double>{4 + 2, 9}));  // relu row sums, summed
}

TEST(ModelBuilder, RejectsMismatchedShapes) {
  Builder b("bad");
  Op x = Parameter(b, Shape::Array(PrimitiveType::kF32, {2, 3}), "x");
  Op y = Parameter(b, Shape::Array(PrimitiveType::kF32, {3}), "y");
  EXPECT_THROW(Add(x, y), std::invalid_argument);
  EXPECT_THROW(MatMul(x, x), std::invalid_argument);
  EXPECT_THROW(Reshape(x, {4}), std::invalid_argument);
  EXPECT_THROW(Transpose(x, {0, 0}), std::invalid_argument);
  Builder other("other");
  Op z = Parameter(other, Shape::Array(PrimitiveType::kF32, {2, 3}), "z");
  EXPECT_THROW(Add(x, z), std::invalid_argument);
}

TEST(ModelBuilder, WindowsFollowXlaSamePadding) {
  Window2D w = Window2D::Same(224, 224, 7, 2);  // ResNet stem: 112 outputs, pad 2 and 3
  EXPECT_EQ(w.pad_top, 2);
  EXPECT_EQ(w.pad_bottom, 3);
  Builder b("conv");
  Op x = Parameter(b, Shape::Array(PrimitiveType::kF32, {1, 224, 224, 3}), "x");
  Op k = Parameter(b, Shape::Array(PrimitiveType::kF32, {7, 7, 3, 64}), "k");
  EXPECT_EQ(Conv2D(x, k, w).dims(), (std::vector<int64_t>{1, 112, 112, 64}));
  EXPECT_EQ(MaxPool(x, Window2D::Same(224, 224, 3, 2)).dims(),
            (std::vector<int64_t>{1, 112, 112, 3}));
}

// FLOPs of the mlp training step by hand: forward 2*B*(784*1024 + 1024*1024 + 1024*10); the
// backward pass repeats it for the weight gradients and, but for the first layer (images get
// no gradient), for the activation gradients.
TEST(ModelBuilder, StatsCountDotFlops) {
  BuiltModel built = BuildModel(*FindModel("mlp"), {.train = true});
  const double b = 128, l1 = 784 * 1024, l2 = 1024 * 1024, l3 = 1024 * 10;
  EXPECT_DOUBLE_EQ(built.stats.flops_per_replica, 2 * b * (l1 + l2 + l3) * 2 + 2 * b * (l2 + l3));
  EXPECT_EQ(built.stats.parameters, 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10);
  EXPECT_EQ(built.per_replica_batch, 128);
}

TEST(ModelBuilder, ForwardPassAndSingleReplica) {
  BuiltModel built = BuildModel(*FindModel("mlp"), {.global_batch = 4, .replicas = 1});
  auto module = hlo::ParseHlo(built.hlo);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_EQ(module->replica_count, 1);
  EXPECT_EQ(module->entry()->root()->shape().dims, (std::vector<int64_t>{4, 10}));
  EXPECT_EQ(built.hlo.find("all-reduce"), std::string::npos);
  BuiltModel train = BuildModel(*FindModel("mlp"), {.replicas = 1, .train = true});
  EXPECT_EQ(train.hlo.find("all-reduce"), std::string::npos);  // nothing to reduce over
}

// A framework's data-parallel step: one all-reduce per gradient and one of the loss (XLA's
// all-reduce-combiner buckets them).
TEST(ModelBuilder, AnAllReducePerGradientAndOfTheLoss) {
  BuiltModel built = BuildModel(*FindModel("transformer-layer"), {.train = true});
  size_t count = 0;
  std::istringstream lines(built.hlo);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" all-reduce(") == std::string::npos) continue;
    ++count;
    EXPECT_EQ(line.find("= ("), std::string::npos) << "a tuple all-reduce: " << line;
  }
  EXPECT_GT(count, 10u);  // the loss and the gradient of each of its 16 weights
  EXPECT_NE(built.hlo.find("replica_groups={{0,1,2,3,4,5,6,7}}"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::model
