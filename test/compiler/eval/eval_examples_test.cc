// Host evaluator on the example modules in examples/hlo, with random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"
#include "isa/bf16.h"

namespace tpusim::eval {
namespace {

hlo::HloModule Load(const std::string& name) {
  std::ifstream in("examples/hlo/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  Result<hlo::HloModule> m = hlo::ParseHlo(ss.str(), name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : hlo::HloModule();
}

// One random argument per entry parameter.
std::vector<Value> RandomArgs(const hlo::HloModule& m, uint64_t seed) {
  std::vector<Value> args;
  for (const hlo::HloInstruction* p : m.entry()->parameters()) {
    args.push_back(Value::Random(p->shape(), seed + p->parameter_number()));
  }
  return args;
}

float Bf(double x) { return isa::RoundToBf16(static_cast<float>(x)); }

TEST(EvalExamples, MlpTrainStepLossMatchesHandWrittenForwardPass) {
  hlo::HloModule m = Load("mlp_train_step.hlo");
  ASSERT_NE(m.entry(), nullptr);
  std::vector<Value> a = RandomArgs(m, 1);
  Result<std::vector<Value>> r = Evaluate(m, a);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].dims(), (std::vector<int64_t>{784, 128}));
  // Forward pass: DEFAULT precision dots (bf16 operands, f32 sums), f32 elsewhere.
  const Value &w1 = a[0], &b1 = a[1], &w2 = a[2], &b2 = a[3], &x = a[4], &y = a[5];
  std::vector<float> h(32 * 128);
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 128; ++j) {
      float acc = 0;
      for (int k = 0; k < 784; ++k) acc += Bf(x.data[i * 784 + k]) * Bf(w1.data[k * 128 + j]);
      h[i * 128 + j] = std::max(acc + static_cast<float>(b1.data[j]), 0.0f);
    }
  }
  float loss = 0;
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 10; ++j) {
      float acc = 0;
      for (int k = 0; k < 128; ++k) acc += Bf(h[i * 128 + k]) * Bf(w2.data[k * 10 + j]);
      float d = acc + static_cast<float>(b2.data[j]) - static_cast<float>(y.data[i * 10 + j]);
      loss += d * d;
    }
  }
  loss *= 0.003125f;
  EXPECT_EQ((*r)[4].scalar(), loss);
  // The SGD step moved the weights, by little.
  double moved = 0;
  for (int64_t i = 0; i < w1.size(); ++i)
    moved = std::max(moved, std::fabs((*r)[0].data[i] - w1.data[i]));
  EXPECT_GT(moved, 0);
  EXPECT_LT(moved, 0.1);
}

TEST(EvalExamples, ConvBnRelu) {
  hlo::HloModule m = Load("conv_bn_relu.hlo");
  ASSERT_NE(m.entry(), nullptr);
  Result<std::vector<Value>> r = Evaluate(m, RandomArgs(m, 5));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const Value& y = (*r)[0];
  EXPECT_EQ(y.type(), hlo::PrimitiveType::kBF16);
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{8, 16, 16, 128}));
  int64_t zeros = std::count(y.data.begin(), y.data.end(), 0.0);
  for (double v : y.data) ASSERT_TRUE(v >= 0 && std::isfinite(v));
  for (double v : y.data) ASSERT_EQ(v, Bf(v));
  EXPECT_GT(zeros, y.size() / 5);  // relu after normalization zeroes a good share
  EXPECT_LT(zeros, y.size() * 4 / 5);
}

TEST(EvalExamples, WhileLoopAndFusion) {
  hlo::HloModule loop = Load("while_loop.hlo");
  ASSERT_NE(loop.entry(), nullptr);
  std::vector<Value> args = RandomArgs(loop, 9);
  Result<std::vector<Value>> r = Evaluate(loop, args);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (double v : (*r)[0].data) EXPECT_TRUE(v >= -1 && v <= 1);  // tanh of the last step

  hlo::HloModule fusion = Load("fusion_tiled.hlo");
  ASSERT_NE(fusion.entry(), nullptr);
  std::vector<Value> fargs = RandomArgs(fusion, 3);
  fargs[1] = Value::Scalar(hlo::PrimitiveType::kS32, 200);  // clamps to 128
  r = Evaluate(fusion, fargs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  const Value& in = fargs[0];
  auto silu = [](double x) {
    return Bf(static_cast<float>(x) / (1.0f + std::exp(-static_cast<float>(x))));
  };
  EXPECT_EQ((*r)[0].data[0], silu(in.data[128 * 1024]));
  EXPECT_EQ((*r)[1].data[0], 1);
  EXPECT_EQ((*r)[1].data[1], -2.5);
  EXPECT_TRUE(std::isinf((*r)[1].data[2]) && std::isnan((*r)[1].data[3]));
  EXPECT_EQ((*r)[2].data, in.data);
}

TEST(EvalExamples, AllReduceReplicas) {
  hlo::HloModule m = Load("allreduce_replicas.hlo");
  ASSERT_NE(m.entry(), nullptr);
  ASSERT_EQ(m.replica_count, 8);
  Result<std::vector<Value>> single = Evaluate(m, RandomArgs(m, 0));
  ASSERT_FALSE(single.ok());
  EXPECT_EQ(single.status().message(),
            "%all-reduce.1: replica group names replica 1 but 1 replicas run (use "
            "EvaluateReplicated)");
  std::vector<std::vector<Value>> args;
  for (int r = 0; r < 8; ++r) args.push_back(RandomArgs(m, 100 * r));
  Result<std::vector<std::vector<Value>>> out = EvaluateReplicated(m, args);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 8u);
  // Element 5 of the all-reduce, summed in replica order in f32, then permuted r -> r+1.
  float sum = 0;
  for (int r = 0; r < 8; ++r) sum += static_cast<float>(args[r][0].data[5]);
  for (int r = 0; r < 8; ++r) EXPECT_EQ((*out)[r][0].data[5], sum);
  // all-gather: replica 3's shard sits at [192, 256) everywhere.
  EXPECT_EQ((*out)[6][1].data[192 + 7], args[3][1].data[7]);
  // reduce-scatter with the iota groups [1,8]<=[2,4]T(1,0) = {0,4,1,5,2,6,3,7}: replica 4
  // is second in its group and gets rows [128, 256) of the sum.
  float rs = 0;
  for (int r : {0, 4, 1, 5, 2, 6, 3, 7}) rs += static_cast<float>(args[r][0].data[128 * 256]);
  EXPECT_EQ((*out)[4][2].data[0], rs);
}

}  // namespace
}  // namespace tpusim::eval
