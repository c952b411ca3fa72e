// Host evaluator: dot and convolution against naive loops, and the precision modes.
#include <gtest/gtest.h>

#include "compiler/eval/evaluator.h"
#include "isa/bf16.h"

namespace tpusim::eval {
namespace {

using hlo::PrimitiveType;
constexpr PrimitiveType F32 = PrimitiveType::kF32;

Value Eval1(const std::string& entry, const std::vector<Value>& args) {
  Result<std::vector<Value>> r = EvaluateText("HloModule t\nENTRY %e {\n" + entry + "\n}\n", args);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->at(0) : Value();
}

Value Rand(std::vector<int64_t> dims, uint64_t seed, PrimitiveType t = F32) {
  return Value::Random(hlo::Shape::Array(t, std::move(dims)), seed);
}

float Bf(double x) { return isa::RoundToBf16(static_cast<float>(x)); }

TEST(EvalDot, BatchedGeneralDimsMatchNaiveLoop) {
  // lhs [b=2, k=3, m=4], rhs [n=5, b=2, k=3] -> [b, m, n], HIGHEST precision.
  Value a = Rand({2, 3, 4}, 1), b = Rand({5, 2, 3}, 2);
  Value r = Eval1(
      "%a = f32[2,3,4] parameter(0)\n%b = f32[5,2,3] parameter(1)\n"
      "ROOT %d = f32[2,4,5] dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={1}, "
      "lhs_contracting_dims={1}, rhs_contracting_dims={2}, "
      "operand_precision={highest,highest}",
      {a, b});
  ASSERT_EQ(r.size(), 40);
  for (int64_t bb = 0; bb < 2; ++bb) {
    for (int64_t m = 0; m < 4; ++m) {
      for (int64_t n = 0; n < 5; ++n) {
        float acc = 0;
        for (int64_t k = 0; k < 3; ++k) {
          acc += static_cast<float>(a.data[bb * 12 + k * 4 + m]) *
                 static_cast<float>(b.data[n * 6 + bb * 3 + k]);
        }
        EXPECT_EQ(r.data[bb * 20 + m * 5 + n], acc) << bb << " " << m << " " << n;
      }
    }
  }
}

TEST(EvalDot, DefaultPrecisionRoundsOperandsToBf16) {
  // 1 + 2^-10 is not a bf16 value: DEFAULT sees 1, HIGHEST keeps it.
  Value a = Value::FromVector(F32, {1, 2}, {1.0 + 1.0 / 1024, 3});
  Value b = Value::FromVector(F32, {2, 1}, {1, 1.0 / 1024});
  std::string dot =
      "%a = f32[1,2] parameter(0)\n%b = f32[2,1] parameter(1)\n"
      "ROOT %d = f32[1,1] dot(%a, %b), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={0}";
  EXPECT_EQ(Eval1(dot, {a, b}).data[0], 1.0 + 3.0 / 1024);
  EXPECT_EQ(Eval1(dot + ", operand_precision={default,default}", {a, b}).data[0], 1.0 + 3.0 / 1024);
  EXPECT_EQ(Eval1(dot + ", operand_precision={highest,highest}", {a, b}).data[0], 1.0 + 4.0 / 1024);
  EXPECT_EQ(Eval1(dot + ", operand_precision={high,high}", {a, b}).data[0], 1.0 + 4.0 / 1024);
  // bf16 operands with an f32 result: exact products, f32 accumulation.
  Value x = Rand({8, 16}, 3, PrimitiveType::kBF16), y = Rand({16, 4}, 4, PrimitiveType::kBF16);
  Value r = Eval1(
      "%x = bf16[8,16] parameter(0)\n%y = bf16[16,4] parameter(1)\n"
      "ROOT %d = f32[8,4] dot(%x, %y), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={0}",
      {x, y});
  for (int64_t i = 0; i < 8; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < 16; ++k) {
        acc += static_cast<float>(x.data[i * 16 + k]) * static_cast<float>(y.data[k * 4 + j]);
      }
      EXPECT_EQ(r.data[i * 4 + j], acc);
    }
  }
}

TEST(EvalDot, IntegerDot) {
  Value a = Value::FromVector(PrimitiveType::kS32, {2, 2}, {1, 2, 3, 4});
  Value r = Eval1(
      "%a = s32[2,2] parameter(0)\nROOT %d = s32[2,2] dot(%a, %a), "
      "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
      {a});
  EXPECT_EQ(r.data, (std::vector<double>{7, 10, 15, 22}));
}

// Naive NHWC x HWIO convolution with stride, padding, lhs/rhs dilation and feature groups,
// DEFAULT precision (bf16 operands, f32 accumulation).
std::vector<double> NaiveConv(const Value& in, const Value& k, int64_t stride, int64_t pad_lo,
                              int64_t lhs_dil, int64_t rhs_dil, int64_t groups,
                              const std::vector<int64_t>& out_dims) {
  int64_t N = in.dims()[0], H = in.dims()[1], W = in.dims()[2], C = in.dims()[3];
  int64_t KH = k.dims()[0], KW = k.dims()[1], I = k.dims()[2], O = k.dims()[3];
  int64_t OH = out_dims[1], OW = out_dims[2];
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t o = 0; o < O; ++o) {
          int64_t g = o / (O / groups);
          float acc = 0;
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              int64_t ph = oh * stride + kh * rhs_dil - pad_lo,
                      pw = ow * stride + kw * rhs_dil - pad_lo;
              if (ph < 0 || pw < 0 || ph % lhs_dil || pw % lhs_dil) continue;
              int64_t h = ph / lhs_dil, w = pw / lhs_dil;
              if (h >= H || w >= W) continue;
              for (int64_t i = 0; i < I; ++i) {
                acc += Bf(in.data[((n * H + h) * W + w) * C + g * I + i]) *
                       Bf(k.data[((kh * KW + kw) * I + i) * O + o]);
              }
            }
          out.push_back(acc);
        }
  return out;
}

TEST(EvalConvolution, MatchesNaiveLoop) {
  struct Case {
    std::string window;
    int64_t stride, pad, lhs_dil, rhs_dil, groups;
    std::vector<int64_t> in, kernel, out;
  };
  std::vector<Case> cases = {
      {"size=3x3 pad=1_1x1_1", 1, 1, 1, 1, 1, {2, 5, 5, 3}, {3, 3, 3, 4}, {2, 5, 5, 4}},
      {"size=3x3 stride=2x2 pad=0_1x0_1", 2, 0, 1, 1, 1, {1, 6, 6, 2}, {3, 3, 2, 3}, {1, 3, 3, 3}},
      {"size=2x2 rhs_dilate=2x2", 1, 0, 1, 2, 1, {1, 5, 5, 2}, {2, 2, 2, 2}, {1, 3, 3, 2}},
      {"size=2x2 lhs_dilate=2x2", 1, 0, 2, 1, 1, {1, 3, 3, 1}, {2, 2, 1, 2}, {1, 4, 4, 2}},
      {"size=3x3 pad=1_1x1_1", 1, 1, 1, 1, 2, {1, 4, 4, 4}, {3, 3, 2, 6}, {1, 4, 4, 6}},
  };
  for (const Case& c : cases) {
    Value in = Rand(c.in, 11), k = Rand(c.kernel, 12);
    auto shape = [](const std::vector<int64_t>& d) {
      hlo::Shape s = hlo::Shape::Array(F32, d);
      return s.ToString(false);
    };
    std::string text =
        "%i = " + shape(c.in) + " parameter(0)\n%k = " + shape(c.kernel) +
        " parameter(1)\nROOT %c = " + shape(c.out) + " convolution(%i, %k), window={" + c.window +
        "}, dim_labels=b01f_01io->b01f, feature_group_count=" + std::to_string(c.groups);
    Value r = Eval1(text, {in, k});
    EXPECT_EQ(r.data, NaiveConv(in, k, c.stride, c.pad, c.lhs_dil, c.rhs_dil, c.groups, c.out))
        << c.window;
  }
}

TEST(EvalConvolution, DimLabelsReversalAndBatchGroups) {
  // 1-D: input bf0 [batch 1, feature 1, 4], kernel oi0 [1, 1, 2] reversed.
  Value in = Value::FromVector(F32, {1, 1, 4}, {1, 2, 3, 4});
  Value k = Value::FromVector(F32, {1, 1, 2}, {10, 1});
  std::string h = "%i = f32[1,1,4] parameter(0)\n%k = f32[1,1,2] parameter(1)\n";
  EXPECT_EQ(Eval1(h + "ROOT %c = f32[1,1,3] convolution(%i, %k), window={size=2}, "
                      "dim_labels=bf0_oi0->bf0",
                  {in, k})
                .data,
            (std::vector<double>{12, 23, 34}));
  EXPECT_EQ(Eval1(h + "ROOT %c = f32[1,1,3] convolution(%i, %k), window={size=2 rhs_reversal=1}, "
                      "dim_labels=bf0_oi0->bf0",
                  {in, k})
                .data,
            (std::vector<double>{21, 32, 43}));
  // batch_group_count=2: input batch 2 splits in two groups; output feature o reads group o.
  Value in2 = Value::FromVector(F32, {2, 1, 3}, {1, 2, 3, 10, 20, 30});
  Value k2 = Value::FromVector(F32, {2, 1, 1}, {1, 2});
  EXPECT_EQ(Eval1("%i = f32[2,1,3] parameter(0)\n%k = f32[2,1,1] parameter(1)\n"
                  "ROOT %c = f32[1,2,3] convolution(%i, %k), window={size=1}, "
                  "dim_labels=bf0_oi0->bf0, batch_group_count=2",
                  {in2, k2})
                .data,
            (std::vector<double>{1, 2, 3, 20, 40, 60}));
}

TEST(EvalConvolution, PrecisionAppliesToo) {
  Value in = Value::FromVector(F32, {1, 1, 2}, {1.0 + 1.0 / 1024, 1});
  Value k = Value::FromVector(F32, {1, 1, 1}, {1});
  std::string c =
      "%i = f32[1,1,2] parameter(0)\n%k = f32[1,1,1] parameter(1)\n"
      "ROOT %c = f32[1,1,2] convolution(%i, %k), window={size=1}, "
      "dim_labels=bf0_oi0->bf0";
  EXPECT_EQ(Eval1(c, {in, k}).data, (std::vector<double>{1, 1}));
  EXPECT_EQ(Eval1(c + ", operand_precision={highest,highest}", {in, k}).data,
            (std::vector<double>{1.0 + 1.0 / 1024, 1}));
}

}  // namespace
}  // namespace tpusim::eval
