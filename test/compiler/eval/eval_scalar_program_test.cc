// ScalarProgram (compiler/eval/scalar_program.h): the flattened form of reducers and
// comparators gives bit for bit what the interpreter gives on every argument tried, and
// declines computations it does not cover.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/eval/interpreter.h"
#include "compiler/hlo/parser.h"

namespace tpusim::eval {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const char kModule[] = R"(HloModule m
%argmax (a0: f32[], a1: s32[], b0: f32[], b1: s32[]) -> (f32[], s32[]) {
  %a0 = f32[] parameter(0)
  %a1 = s32[] parameter(1)
  %b0 = f32[] parameter(2)
  %b1 = s32[] parameter(3)
  %gt = pred[] compare(%a0, %b0), direction=GT
  %nan = pred[] compare(%a0, %a0), direction=NE
  %or = pred[] or(%gt, %nan)
  %eq = pred[] compare(%a0, %b0), direction=EQ
  %lt = pred[] compare(%a1, %b1), direction=LT
  %and = pred[] and(%eq, %lt)
  %pick = pred[] or(%or, %and)
  %v = f32[] select(%pick, %a0, %b0)
  %i = s32[] select(%pick, %a1, %b1)
  ROOT %t = (f32[], s32[]) tuple(%v, %i)
}
%mixed (a: bf16[], b: bf16[]) -> (bf16[], s32[], f32[]) {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  %lo = bf16[] constant(-1.5)
  %hi = bf16[] constant(3.25)
  %s = bf16[] add(%a, %b)
  %c = bf16[] clamp(%lo, %s, %hi)
  %e = bf16[] exponential(%a)
  %m = bf16[] multiply(%c, %e)
  %i = s32[] convert(%m)
  %f = f32[] convert(%b)
  %bits = s32[] bitcast-convert(%f)
  %x = s32[] xor(%i, %bits)
  %sq = f32[] sqrt(%f)
  ROOT %t = (bf16[], s32[], f32[]) tuple(%m, %x, %sq)
}
%total (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %lt = pred[] compare(%a, %b), direction=LT, type=TOTALORDER
}
%vector (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %v = f32[2] broadcast(%a), dimensions={}
  %r = f32[1] slice(%v), slice={[0:1]}
  %s = f32[] reshape(%r)
  ROOT %add = f32[] add(%s, %b)
}
ENTRY %main (p: f32[]) -> f32[] {
  ROOT %p = f32[] parameter(0)
}
)";

const double kSamples[] = {0.0, -0.0, 1.0, -2.5, 3.0, 0.1, 1e30, -1e-30, kInf, -kInf, kNaN, 7.0};

// Same bits, so that NaN equals NaN and -0 differs from +0.
bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

class ScalarProgramTest : public ::testing::Test {
 protected:
  // Runs `name` both ways on every argument combination drawn from kSamples (rounded to
  // each parameter's type) and expects the same bits.
  void ExpectSameAsInterpreter(const char* name) {
    const hlo::HloComputation& comp = *module_.Find(name);
    std::unique_ptr<ScalarProgram> program = ScalarProgram::Build(comp);
    ASSERT_NE(program, nullptr) << name;
    std::vector<PrimitiveType> types;
    for (const auto& instr : comp.instructions())
      if (instr->opcode() == hlo::Opcode::kParameter) types.push_back(instr->shape().type);
    const size_t n = types.size(), count = std::size(kSamples);
    size_t combos = 1;
    for (size_t k = 0; k < n; ++k) combos *= count;
    std::vector<double> args(n), got(program->num_results());
    for (size_t c = 0; c < combos; ++c) {
      std::vector<Value> values;
      for (size_t k = 0, rest = c; k < n; ++k, rest /= count) {
        args[k] = RoundTo(types[k], kSamples[rest % count]);
        values.push_back(Value::Scalar(types[k], args[k]));
      }
      ASSERT_TRUE(program->Run(args, got).ok());
      Result<Value> want = interp_.Call(comp, values);
      ASSERT_TRUE(want.ok()) << want.status().message();
      std::vector<Value> flat = want->IsTuple() ? want->elements : std::vector<Value>{*want};
      ASSERT_EQ(flat.size(), got.size());
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_TRUE(SameBits(got[k], flat[k].data[0]))
            << name << " combination " << c << " result " << k << ": " << got[k] << " vs "
            << flat[k].data[0];
    }
  }

  hlo::Result<hlo::HloModule> parsed_ = hlo::ParseHlo(kModule);
  const hlo::HloModule& module_ = *parsed_;
  Interpreter interp_{module_, {}, 0, 1, nullptr};
};

TEST_F(ScalarProgramTest, ArgmaxReducerWithNaNAndTies) { ExpectSameAsInterpreter("argmax"); }

TEST_F(ScalarProgramTest, ConstantsClampConvertsAndBitcasts) { ExpectSameAsInterpreter("mixed"); }

TEST_F(ScalarProgramTest, TotalOrderComparator) { ExpectSameAsInterpreter("total"); }

TEST_F(ScalarProgramTest, DeclinesNonScalarInstructions) {
  EXPECT_EQ(ScalarProgram::Build(*module_.Find("vector")), nullptr);
}

TEST_F(ScalarProgramTest, InterpreterCallScalarOnTheArgmaxReducer) {
  const double args[] = {kNaN, 4, 2, 1};
  const PrimitiveType types[] = {PrimitiveType::kF32, PrimitiveType::kS32, PrimitiveType::kF32,
                                 PrimitiveType::kS32};
  Result<std::vector<double>> r = interp_.CallScalar(*module_.Find("argmax"), args, types);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE(std::isnan((*r)[0]));  // NaN wins
  EXPECT_EQ((*r)[1], 4);
}

}  // namespace
}  // namespace tpusim::eval
