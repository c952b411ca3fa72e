// Host evaluator: values, elementwise ops, sources (constant, iota, rng) and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/eval/counter_rng.h"
#include "compiler/eval/evaluator.h"
#include "isa/bf16.h"

namespace tpusim::eval {
namespace {

using hlo::PrimitiveType;
constexpr PrimitiveType F32 = PrimitiveType::kF32;
constexpr PrimitiveType S32 = PrimitiveType::kS32;

// Evaluates an ENTRY body and returns its first result's elements.
std::vector<double> Eval(const std::string& body, const std::vector<Value>& args = {}) {
  Result<std::vector<Value>> r = EvaluateText("HloModule t\nENTRY %e {\n" + body + "\n}\n", args);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->at(0).data : std::vector<double>{};
}

std::string Error(const std::string& body, const std::vector<Value>& args = {}) {
  Result<std::vector<Value>> r = EvaluateText("HloModule t\nENTRY %e {\n" + body + "\n}\n", args);
  return r.ok() ? "" : r.status().message();
}

TEST(EvalValue, RoundsToItsType) {
  EXPECT_EQ(RoundTo(PrimitiveType::kS8, 130), -126);
  EXPECT_EQ(RoundTo(PrimitiveType::kU8, -1), 255);
  EXPECT_EQ(RoundTo(PrimitiveType::kS32, 2147483648.0), -2147483648.0);
  EXPECT_EQ(RoundTo(PrimitiveType::kPred, 5), 1);
  EXPECT_EQ(RoundTo(F32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(RoundTo(PrimitiveType::kBF16, 1.00390625), 1.0);       // tie to even
  EXPECT_EQ(RoundTo(PrimitiveType::kBF16, 1.01171875), 1.015625);  // tie to even (up)
  EXPECT_EQ(RoundTo(PrimitiveType::kF16, 1.0 + 1.0 / 4096), 1.0);
  EXPECT_EQ(ConvertTo(F32, S32, 1e10), 2147483647.0);
  EXPECT_EQ(ConvertTo(F32, S32, NAN), 0.0);
  EXPECT_EQ(ConvertTo(F32, S32, -2.7), -2.0);
}

TEST(EvalValue, WrapsHugeValues) {
  EXPECT_EQ(RoundTo(PrimitiveType::kU32, -1), 4294967295.0);
  EXPECT_EQ(RoundTo(PrimitiveType::kS64, -1), -1);
  EXPECT_EQ(RoundTo(PrimitiveType::kS8, 0x1p59 + 0x1p7), -128);
  EXPECT_EQ(RoundTo(PrimitiveType::kU16, 0x1p65 + 0x1p13), 8192);
  EXPECT_EQ(RoundTo(PrimitiveType::kU16, -0x1p63 - 0x1p12), 61440);
  EXPECT_EQ(RoundTo(PrimitiveType::kU64, 0x1p63), 0x1p63);
  EXPECT_EQ(Value::FromVector(F32, {2}, {1, 2}).ToString(), "f32[2]{1, 2}");
}

TEST(EvalElementwise, Bf16AndF16RoundEveryResult) {
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even gives 1.
  EXPECT_EQ(Eval("%a = bf16[2] constant({1, 1.0078125})\n%b = bf16[2] constant({0.00390625, "
                 "0.00390625})\nROOT %r = bf16[2] add(%a, %b)"),
            (std::vector<double>{1, 1.015625}));
  EXPECT_EQ(Eval("%a = bf16[] constant(3)\nROOT %r = bf16[] divide(%a, %a)"),
            (std::vector<double>{1}));
  EXPECT_EQ(
      Eval("%a = bf16[] constant(1)\n%b = bf16[] constant(3)\nROOT %r = bf16[] divide(%a, %b)"),
      (std::vector<double>{isa::RoundToBf16(1.0f / 3.0f)}));
  EXPECT_EQ(Eval("%a = f16[] constant(2048)\n%b = f16[] constant(1)\nROOT %r = f16[] add(%a, %b)"),
            (std::vector<double>{2048}));  // 2049 is not an f16 value; ties to even
}

TEST(EvalValue, RandomIsDeterministicAndInRange) {
  hlo::Shape s = hlo::Shape::Array(F32, {4, 5});
  Value a = Value::Random(s, 7), b = Value::Random(s, 7), c = Value::Random(s, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (double x : a.data) EXPECT_TRUE(x >= -1 && x < 1);
  Value i = Value::Random(hlo::Shape::Array(S32, {100}), 1);
  for (double x : i.data) EXPECT_TRUE(x >= 0 && x < 16);
  EXPECT_THROW(Value::FromVector(F32, {2}, {1, 2, 3}), std::invalid_argument);
}

TEST(EvalElementwise, FloatUnaryOps) {
  Value x = Value::FromVector(F32, {4}, {-1.5, -0.5, 0.5, 2.5});
  auto run = [&](const std::string& op) {
    return Eval("%x = f32[4] parameter(0)\nROOT %r = f32[4] " + op + "(%x)", {x});
  };
  EXPECT_EQ(run("negate"), (std::vector<double>{1.5, 0.5, -0.5, -2.5}));
  EXPECT_EQ(run("abs"), (std::vector<double>{1.5, 0.5, 0.5, 2.5}));
  EXPECT_EQ(run("sign"), (std::vector<double>{-1, -1, 1, 1}));
  EXPECT_EQ(run("floor"), (std::vector<double>{-2, -1, 0, 2}));
  EXPECT_EQ(run("ceil"), (std::vector<double>{-1, -0.0, 1, 3}));
  EXPECT_EQ(run("round-nearest-even"), (std::vector<double>{-2, -0.0, 0, 2}));
  std::vector<double> e = run("exponential");
  EXPECT_EQ(e[3], static_cast<double>(std::exp(2.5f)));
  EXPECT_EQ(run("logistic")[2], static_cast<double>(1.0f / (1.0f + std::exp(-0.5f))));
  EXPECT_EQ(run("tanh")[0], static_cast<double>(std::tanh(-1.5f)));
  EXPECT_EQ(run("sine")[3], static_cast<double>(std::sin(2.5f)));
  EXPECT_EQ(run("cosine")[3], static_cast<double>(std::cos(2.5f)));
  EXPECT_EQ(run("exponential-minus-one")[2], static_cast<double>(std::expm1(0.5f)));
  EXPECT_EQ(run("log-plus-one")[2], static_cast<double>(std::log1p(0.5f)));
  EXPECT_TRUE(std::isnan(run("log")[0]));
  EXPECT_TRUE(std::isnan(run("sqrt")[0]));
  EXPECT_EQ(run("sqrt")[3], static_cast<double>(std::sqrt(2.5f)));
  EXPECT_EQ(run("rsqrt")[3], static_cast<double>(1.0f / std::sqrt(2.5f)));
}

// erf as erff, is-finite as a pred, round-nearest-afz with ties away from zero (where
// round-nearest-even goes to the even neighbour), signed zeros and NaN kept.
TEST(EvalElementwise, ErfIsFiniteAndRoundNearestAfz) {
  Value x = Value::FromVector(F32, {8}, {-2.5, -0.5, 0.5, 2.5, 0.49999997, -0.0, INFINITY, NAN});
  auto run = [&](const std::string& op, const std::string& type = "f32") {
    return Eval("%x = f32[8] parameter(0)\nROOT %r = " + type + "[8] " + op + "(%x)", {x});
  };
  const std::vector<double> afz = run("round-nearest-afz");
  EXPECT_EQ(std::vector<double>(afz.begin(), afz.end() - 1),
            (std::vector<double>{-3, -1, 1, 3, 0, -0.0, INFINITY}));
  EXPECT_TRUE(std::signbit(afz[5]));
  EXPECT_TRUE(std::isnan(afz[7]));
  EXPECT_EQ(run("is-finite", "pred"), (std::vector<double>{1, 1, 1, 1, 1, 1, 0, 0}));
  const std::vector<double> erf = run("erf");
  EXPECT_EQ(erf[2], static_cast<double>(std::erf(0.5f)));
  EXPECT_EQ(erf[0], -static_cast<double>(std::erf(2.5f)));
  EXPECT_TRUE(std::signbit(erf[5]) && erf[5] == 0);
  EXPECT_EQ(erf[6], 1.0);
  EXPECT_TRUE(std::isnan(erf[7]));
  EXPECT_EQ(Eval("%x = bf16[] constant(0.5)\nROOT %r = bf16[] erf(%x)"),
            (std::vector<double>{isa::RoundToBf16(std::erf(0.5f))}));
}

TEST(EvalElementwise, BinaryOpsAndF32Rounding) {
  Value a = Value::FromVector(F32, {4}, {1, -7, 0.1, 3});
  Value b = Value::FromVector(F32, {4}, {3, 2, 0.2, NAN});
  auto run = [&](const std::string& op) {
    return Eval(
        "%a = f32[4] parameter(0)\n%b = f32[4] parameter(1)\nROOT %r = f32[4] " + op + "(%a, %b)",
        {a, b});
  };
  EXPECT_EQ(run("add")[2], static_cast<double>(0.1f + 0.2f));  // f32, not double, sum
  EXPECT_EQ(run("subtract")[1], -9);
  EXPECT_EQ(run("multiply")[1], -14);
  EXPECT_EQ(run("divide")[0], static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(run("remainder")[1], -1);  // sign of the dividend
  EXPECT_EQ(run("power")[0], 1);
  std::vector<double> mx = run("maximum"), mn = run("minimum");
  EXPECT_EQ(mx[0], 3);
  EXPECT_EQ(mn[1], -7);
  EXPECT_TRUE(std::isnan(mx[3]) && std::isnan(mn[3]));  // NaN propagates
}

TEST(EvalElementwise, IntegersWrapAndDivideLikeXla) {
  std::string h = "%a = s32[4] parameter(0)\n%b = s32[4] parameter(1)\nROOT %r = s32[4] ";
  Value a = Value::FromVector(S32, {4}, {2147483647, -7, 7, -2147483648.0});
  Value b = Value::FromVector(S32, {4}, {1, 2, 0, -1});
  EXPECT_EQ(Eval(h + "add(%a, %b)", {a, b}),
            (std::vector<double>{-2147483648.0, -5, 7, 2147483647}));
  EXPECT_EQ(Eval(h + "divide(%a, %b)", {a, b}),
            (std::vector<double>{2147483647, -3, -1, -2147483648.0}));
  EXPECT_EQ(Eval(h + "remainder(%a, %b)", {a, b}), (std::vector<double>{0, -1, 7, 0}));
  EXPECT_EQ(Eval(h + "multiply(%a, %b)", {a, b}),
            (std::vector<double>{2147483647, -14, 0, -2147483648.0}));
  EXPECT_EQ(Eval(h + "and(%a, %b)", {a, b}), (std::vector<double>{1, 0, 0, -2147483648.0}));
  EXPECT_EQ(Eval(h + "or(%a, %b)", {a, b}), (std::vector<double>{2147483647, -5, 7, -1}));
  EXPECT_EQ(Eval(h + "xor(%a, %b)", {a, b}), (std::vector<double>{2147483646, -5, 7, 2147483647}));
  EXPECT_EQ(Eval(h + "power(%b, %b)", {a, b}), (std::vector<double>{1, 4, 1, -1}));
  EXPECT_EQ(Eval("%a = s32[4] parameter(0)\nROOT %r = s32[4] not(%a)", {a}),
            (std::vector<double>{-2147483648.0, 6, -8, 2147483647}));
  EXPECT_EQ(Eval("%a = u8[2] constant({250, 3})\n%b = u8[2] constant({10, 5})\n"
                 "ROOT %r = u8[2] subtract(%a, %b)"),
            (std::vector<double>{240, 254}));
}

TEST(EvalElementwise, CompareEveryDirectionSelectClamp) {
  std::string h = "%a = f32[3] constant({1, 2, nan})\n%b = f32[3] constant({2, 2, 2})\n";
  auto cmp = [&](const std::string& dir) {
    return Eval(h + "ROOT %c = pred[3] compare(%a, %b), direction=" + dir);
  };
  EXPECT_EQ(cmp("EQ"), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(cmp("NE"), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(cmp("LT"), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(cmp("LE"), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(cmp("GT"), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(cmp("GE"), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(Eval(h + "%p = pred[3] constant({true, false, true})\n"
                     "ROOT %s = f32[3] select(%p, %a, %b)")[1],
            2);
  EXPECT_EQ(Eval("%lo = f32[] constant(0)\n%x = f32[3] constant({-1, 0.5, 9})\n"
                 "%hi = f32[] constant(1)\nROOT %c = f32[3] clamp(%lo, %x, %hi)"),
            (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(Eval("%p = pred[2] constant({true, false})\n%q = pred[2] constant({true, true})\n"
                 "%n = pred[2] not(%p)\nROOT %r = pred[2] and(%n, %q)"),
            (std::vector<double>{0, 1}));
}

TEST(EvalElementwise, ConvertAndBitcastConvert) {
  EXPECT_EQ(Eval("%x = f32[3] constant({1.00390625, -2.9, 300})\n"
                 "ROOT %r = bf16[3] convert(%x)"),
            (std::vector<double>{1, -2.90625, 300}));
  EXPECT_EQ(Eval("%x = f32[3] constant({-2.9, 1e20, nan})\nROOT %r = s8[3] convert(%x)"),
            (std::vector<double>{-2, 127, 0}));
  EXPECT_EQ(Eval("%x = f32[2] constant({1, -2})\nROOT %r = s32[2] bitcast-convert(%x)"),
            (std::vector<double>{0x3f800000, -1073741824}));
  EXPECT_EQ(Eval("%x = s16[1] constant({16256})\nROOT %r = bf16[1] bitcast-convert(%x)"),
            (std::vector<double>{1}));
  EXPECT_NE(Error("%x = f32[2] constant({1, 2})\nROOT %r = s16[2,2] bitcast-convert(%x)"), "");
}

TEST(EvalSources, IotaAndRng) {
  EXPECT_EQ(Eval("ROOT %i = s32[2,3] iota(), iota_dimension=1"),
            (std::vector<double>{0, 1, 2, 0, 1, 2}));
  std::string rng =
      "%a = f32[] constant(2)\n%b = f32[] constant(3)\n"
      "ROOT %r = f32[64] rng(%a, %b), distribution=RNG_UNIFORM";
  std::vector<double> r1 = Eval(rng), r2 = Eval(rng);
  EXPECT_EQ(r1, r2);
  for (double x : r1) EXPECT_TRUE(x >= 2 && x < 3);
  std::vector<double> n = Eval(
      "%m = f32[] constant(3)\n%s = f32[] constant(2)\n"
      "ROOT %r = f32[4000] rng(%m, %s), distribution=RNG_NORMAL");
  double mean = 0, var = 0;
  for (double x : n) mean += x / n.size();
  for (double x : n) var += (x - mean) * (x - mean) / n.size();
  EXPECT_NEAR(mean, 3, 0.15);
  EXPECT_NEAR(var, 4, 0.4);
  std::string bits =
      "%s = u64[2] constant({1, 2})\n%g = (u64[2], u32[8]) "
      "rng-bit-generator(%s), algorithm=rng_default\n"
      "ROOT %b = u32[8] get-tuple-element(%g), index=1";
  EXPECT_EQ(Eval(bits), Eval(bits));
}

// The counter-based stream (counter_rng.h): rng-bit-generator's element i is
// RngBits32(key, i) for 32-bit bits and words 2i, 2i + 1 for 64-bit ones, the key folded from
// the seed and the state; the state's first element advances by the number of outputs; a
// uniform f32 is RngUniformF32 of the op's key (its name, seed 0, first run).
TEST(EvalSources, CounterBasedStream) {
  const uint64_t key = RngStateKeyFold(RngStateKeyFold(RngStateKeyStart(0), 1), 2);  // state {1, 2}
  const std::string gen =
      "%s = u64[2] constant({1, 2})\n%g = (u64[2], u32[5]) "
      "rng-bit-generator(%s), algorithm=rng_default\n"
      "%w = (u64[2], u64[2]) rng-bit-generator(%s), algorithm=rng_default\n";
  std::vector<double> bits = Eval(gen + "ROOT %b = u32[5] get-tuple-element(%g), index=1");
  ASSERT_EQ(bits.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(bits[i], RngBits32(key, i)) << i;
  EXPECT_EQ(Eval(gen + "ROOT %n = u64[2] get-tuple-element(%g), index=0"),
            (std::vector<double>{1 + 5, 2}));
  const uint64_t wide = RngBits32(key, 0) | uint64_t{RngBits32(key, 1)} << 32;
  EXPECT_EQ(Eval(gen + "ROOT %wide = u64[2] get-tuple-element(%w), index=1").at(0),
            static_cast<double>(wide));
  std::vector<double> u = Eval(
      "%a = f32[] constant(-1)\n%b = f32[] constant(3)\n"
      "ROOT %u = f32[3] rng(%a, %b), distribution=RNG_UNIFORM");
  const uint64_t op_key = RngOpKey(0, "u", 0);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(u[i], RngUniformF32(RngBits32(op_key, i), -1, 3));
  EXPECT_NE(u[0], u[1]);
}

TEST(EvalErrors, NameTheInstruction) {
  EXPECT_EQ(Error("ROOT %c = f32[3] constant({...})"),
            "%c: constant values are elided ({...}); the evaluator needs them");
  EXPECT_EQ(Error("ROOT %p = f32[3] parameter(0)"), "e takes 1 arguments but was given 0");
  EXPECT_EQ(Error("ROOT %p = f32[3] parameter(0)", {Value::Zeros(hlo::Shape::Array(F32, {2}))}),
            "%p: expects f32[3] but argument 0 is f32[2]");
  EXPECT_EQ(Error("%p = pred[2] constant({true, false})\nROOT %r = pred[2] exponential(%p)"),
            "%r: exponential is not defined on pred");
}

TEST(EvalErrors, EveryParsedOpcodeIsSupported) {
  for (int op = 0; op < static_cast<int>(hlo::Opcode::kCount); ++op) {
    auto opcode = static_cast<hlo::Opcode>(op);
    EXPECT_EQ(IsEvaluatorSupported(opcode), hlo::IsSupported(opcode)) << hlo::OpcodeName(opcode);
  }
  // An opcode the parser rejects, built by hand, is a clear error; so is a custom-call whose
  // target is no sharding annotation.
  for (auto [op, message] :
       {std::pair{hlo::Opcode::kInfeed, "%cc: the evaluator does not support infeed"},
        std::pair{hlo::Opcode::kCustomCall, "%cc: custom-call \"\" has no model"}}) {
    hlo::HloModule m;
    auto comp = std::make_unique<hlo::HloComputation>("e");
    hlo::HloInstruction* cc = comp->AddInstruction(
        std::make_unique<hlo::HloInstruction>("cc", op, hlo::Shape::Array(F32, {})));
    comp->set_root(cc);
    m.set_entry(m.AddComputation(std::move(comp)));
    Result<std::vector<Value>> r = Evaluate(m, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), message);
  }
}

}  // namespace
}  // namespace tpusim::eval
