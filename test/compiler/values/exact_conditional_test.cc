// Conditionals with values (lower.cc, branch_dispatch.h): the sequencer reads the branch
// index or predicate from HBM and runs only the chosen branch, whose result lands in the
// conditional's buffer; compared with the evaluator on v3-8.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/eval/value.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::SimulateValues;

// The value `tpusim run` (driver::LoadInputs, seed 1) gives scalar parameter `number`.
double Input(hlo::PrimitiveType type, int number) {
  hlo::Shape s;
  s.type = type;
  const double x = eval::Value::Random(s, 1 + static_cast<uint64_t>(number)).data[0];
  return type == hlo::PrimitiveType::kS32 ? std::fmod(x, 8.0) : x;
}

// Three branches; indices 0 (a - b), 1 (a), 6 (c: out of range) and -5 (b - c: negative)
// pick branches 0, 1, 2 and 2. The branches share computations across conditionals.
constexpr const char* kIndexed = R"(HloModule m, replica_count=8
%square (x: f32[16,128]) -> f32[16,128] {
  %x = f32[16,128]{1,0} parameter(0)
  ROOT %y = f32[16,128]{1,0} multiply(%x, %x)
}
%plus_two (x: f32[16,128]) -> f32[16,128] {
  %x = f32[16,128]{1,0} parameter(0)
  %two = f32[] constant(2)
  %b = f32[16,128]{1,0} broadcast(%two), dimensions={}
  ROOT %y = f32[16,128]{1,0} add(%x, %b)
}
%exp (x: f32[16,128]) -> f32[16,128] {
  %x = f32[16,128]{1,0} parameter(0)
  ROOT %y = f32[16,128]{1,0} exponential(%x)
}
ENTRY %main (x: f32[16,128], a: s32[], b: s32[], c: s32[]) -> (f32[16,128], f32[16,128], f32[16,128], f32[16,128]) {
  %x = f32[16,128]{1,0} parameter(0)
  %a = s32[] parameter(1)
  %b = s32[] parameter(2)
  %c = s32[] parameter(3)
  %zero = s32[] subtract(%a, %b)
  %negative = s32[] subtract(%b, %c)
  %r0 = f32[16,128]{1,0} conditional(%zero, %x, %x, %x), branch_computations={%square, %plus_two, %exp}
  %r1 = f32[16,128]{1,0} conditional(%a, %x, %x, %x), branch_computations={%square, %plus_two, %exp}
  %r2 = f32[16,128]{1,0} conditional(%c, %x, %x, %x), branch_computations={%square, %plus_two, %exp}
  %r3 = f32[16,128]{1,0} conditional(%negative, %x, %x, %x), branch_computations={%square, %plus_two, %exp}
  ROOT %t = (f32[16,128]{1,0}, f32[16,128]{1,0}, f32[16,128]{1,0}, f32[16,128]{1,0}) tuple(%r0, %r1, %r2, %r3)
})";

TEST(ExactConditional, IndexPicksItsBranchAndOutOfRangePicksTheLast) {
  const double a = Input(hlo::PrimitiveType::kS32, 1), b = Input(hlo::PrimitiveType::kS32, 2),
               c = Input(hlo::PrimitiveType::kS32, 3);
  ASSERT_EQ(a, 1);  // the inputs the comment above relies on
  ASSERT_EQ(b, 1);
  ASSERT_EQ(c, 6);
  ExpectMatch(kIndexed, 1e-6);
}

TEST(ExactConditional, CorruptedResultIsDetected) {
  testing::ValueRun r = SimulateValues(kIndexed, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// Predicates from parameters (true, false) and from a compare; tuple operands and results,
// one result element passed through from the operand (copied into place).
TEST(ExactConditional, PredicatePicksTrueOrFalseBranchWithTuples) {
  ASSERT_EQ(Input(hlo::PrimitiveType::kPred, 1), 1);
  ASSERT_EQ(Input(hlo::PrimitiveType::kPred, 2), 0);
  ExpectMatch(R"(HloModule m, replica_count=8
%on_true (p: (f32[8,256], f32[8,256])) -> (f32[8,256], f32[8,256]) {
  %p = (f32[8,256]{1,0}, f32[8,256]{1,0}) parameter(0)
  %x = f32[8,256]{1,0} get-tuple-element(%p), index=0
  %y = f32[8,256]{1,0} get-tuple-element(%p), index=1
  %s = f32[8,256]{1,0} subtract(%x, %y)
  ROOT %t = (f32[8,256]{1,0}, f32[8,256]{1,0}) tuple(%s, %y)
}
%on_false (p: (f32[8,256], f32[8,256])) -> (f32[8,256], f32[8,256]) {
  %p = (f32[8,256]{1,0}, f32[8,256]{1,0}) parameter(0)
  %x = f32[8,256]{1,0} get-tuple-element(%p), index=0
  %y = f32[8,256]{1,0} get-tuple-element(%p), index=1
  %m = f32[8,256]{1,0} multiply(%x, %y)
  %n = f32[8,256]{1,0} negate(%x)
  ROOT %t = (f32[8,256]{1,0}, f32[8,256]{1,0}) tuple(%m, %n)
}
ENTRY %main (x: f32[8,256], p: pred[], q: pred[], y: f32[8,256], s: f32[]) -> (f32[8,256], f32[8,256], f32[8,256], f32[8,256], f32[8,256], f32[8,256]) {
  %x = f32[8,256]{1,0} parameter(0)
  %p = pred[] parameter(1)
  %q = pred[] parameter(2)
  %y = f32[8,256]{1,0} parameter(3)
  %s = f32[] parameter(4)
  %zero = f32[] constant(0)
  %lt = pred[] compare(%s, %zero), direction=LT
  %xy = (f32[8,256]{1,0}, f32[8,256]{1,0}) tuple(%x, %y)
  %c0 = (f32[8,256]{1,0}, f32[8,256]{1,0}) conditional(%p, %xy, %xy), true_computation=%on_true, false_computation=%on_false
  %c1 = (f32[8,256]{1,0}, f32[8,256]{1,0}) conditional(%q, %xy, %xy), true_computation=%on_true, false_computation=%on_false
  %c2 = (f32[8,256]{1,0}, f32[8,256]{1,0}) conditional(%lt, %xy, %xy), true_computation=%on_true, false_computation=%on_false
  %c0e0 = f32[8,256]{1,0} get-tuple-element(%c0), index=0
  %c0e1 = f32[8,256]{1,0} get-tuple-element(%c0), index=1
  %c1e0 = f32[8,256]{1,0} get-tuple-element(%c1), index=0
  %c1e1 = f32[8,256]{1,0} get-tuple-element(%c1), index=1
  %c2e0 = f32[8,256]{1,0} get-tuple-element(%c2), index=0
  %c2e1 = f32[8,256]{1,0} get-tuple-element(%c2), index=1
  ROOT %t = (f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}) tuple(%c0e0, %c0e1, %c1e0, %c1e1, %c2e0, %c2e1)
})",
              1e-6);
}

// A branch returning a constant of one value fills the conditional's buffer with it (s32
// bits exactly); the other branch passes its parameter through.
TEST(ExactConditional, BranchReturningAConstantFillsTheResult) {
  ASSERT_EQ(Input(hlo::PrimitiveType::kPred, 1), 1);
  ExpectMatch(R"(HloModule m, replica_count=8
%seven (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %c = s32[] constant(7)
}
%same (x: s32[]) -> s32[] {
  ROOT %x = s32[] parameter(0)
}
%halves (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} constant({-0.5, -0.5, -0.5, -0.5})
}
%keep (x: f32[4]) -> f32[4] {
  ROOT %x = f32[4]{0} parameter(0)
}
ENTRY %main (x: f32[4], p: pred[], n: s32[]) -> (s32[], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %p = pred[] parameter(1)
  %n = s32[] parameter(2)
  %c0 = s32[] conditional(%p, %n, %n), true_computation=%seven, false_computation=%same
  %c1 = f32[4]{0} conditional(%p, %x, %x), true_computation=%halves, false_computation=%keep
  ROOT %t = (s32[], f32[4]{0}) tuple(%c0, %c1)
})",
              1e-9);
}

// Branch 1 (a = 1) runs, branch 0 does not: the MXUs are busy only when the dot's branch
// is listed second.
std::string DotOrNegate(const std::string& branches) {
  return R"(HloModule m, replica_count=8
%dot (x: f32[512,512]) -> f32[512,512] {
  %x = f32[512,512]{1,0} parameter(0)
  ROOT %y = f32[512,512]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
%negate (x: f32[512,512]) -> f32[512,512] {
  %x = f32[512,512]{1,0} parameter(0)
  ROOT %y = f32[512,512]{1,0} negate(%x)
}
ENTRY %main (x: f32[512,512], a: s32[]) -> f32[512,512] {
  %x = f32[512,512]{1,0} parameter(0)
  %a = s32[] parameter(1)
  ROOT %r = f32[512,512]{1,0} conditional(%a, %x, %x), branch_computations={)" +
         branches + "}\n}";
}

// 512^3 multiply-adds on 128x128 MXUs at 940 MHz: 8,192 cycles, 8.71 us of MXU time in all.
constexpr double kDotMxuMicroseconds = 512.0 * 512 * 512 / (128 * 128) / 940;

TEST(ExactConditional, TimeOfTheTakenDot) {
  ASSERT_EQ(Input(hlo::PrimitiveType::kS32, 1), 1);
  const testing::ValueRun r = SimulateValues(DotOrNegate("%negate, %dot"));
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_LT(r.error, 1e-5);
  EXPECT_NEAR(r.mxu_busy_us, kDotMxuMicroseconds, 1e-3);  // 8,192 cycles of rows
}

TEST(ExactConditional, TimeWithoutTheSkippedDot) {
  const testing::ValueRun r = SimulateValues(DotOrNegate("%dot, %negate"));
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(r.mxu_busy_us, 0);
}

}  // namespace
}  // namespace tpusim
