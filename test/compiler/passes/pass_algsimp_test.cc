// Algebraic simplification: one test per rewrite, and the cases it must leave alone.
#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "compiler/passes/algsimp.h"
#include "compiler/passes/dce.h"

namespace tpusim::passes {
namespace {

// Runs algsimp then dce on an ENTRY computation made of `body`; returns the root's line.
std::string Root(const std::string& body, bool* changed = nullptr) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo("HloModule t\nENTRY %e {\n" + body + "\n}\n");
  if (!m.ok()) return "PARSE: " + m.status().message();
  hlo::Result<bool> r = AlgebraicSimplifierPass(&lowering::TensorCoreTarget()).Run(*m);
  if (!r.ok()) return "ALGSIMP: " + r.status().message();
  if (changed) *changed = *r;
  if (!DcePass().Run(*m).ok()) return "DCE failed";
  hlo::Status v = hlo::VerifyModule(*m);
  if (!v.ok()) return "VERIFY: " + v.message();
  std::string text = hlo::PrintModule(*m);
  hlo::Result<hlo::HloModule> again = hlo::ParseHlo(text);
  if (!again.ok() || hlo::PrintModule(*again) != text) return "NOT REPARSEABLE:\n" + text;
  return hlo::PrintInstruction(*m->entry()->root()) + " #" +
         std::to_string(m->entry()->instructions().size());
}

TEST(PassAlgsimp, IntegerAddZero) {
  EXPECT_EQ(Root("%p = s32[4] parameter(0)\n%z = s32[] constant(0)\n"
                 "%b = s32[4] broadcast(s32[] %z), dimensions={}\n"
                 "%a = s32[4] add(s32[4] %p, s32[4] %b)\nROOT %n = s32[4] negate(s32[4] %a)"),
            "%n = s32[4] negate(s32[4] %p) #2");
  EXPECT_EQ(Root("%p = s32[2] parameter(0)\n%z = s32[2] constant({0, 0})\n"
                 "ROOT %a = s32[2] add(s32[2] %z, s32[2] %p)"),
            "%p = s32[2] parameter(0) #1");
}

TEST(PassAlgsimp, FloatAddZeroOnlyNegativeZero) {
  bool changed = true;
  // x + 0.0 is not x when x is -0.0: kept.
  EXPECT_EQ(Root("%p = f32[2] parameter(0)\n%z = f32[2] constant({0, 0})\n"
                 "ROOT %a = f32[2] add(f32[2] %p, f32[2] %z)",
                 &changed),
            "%a = f32[2] add(f32[2] %p, f32[2] %z) #3");
  EXPECT_FALSE(changed);
  EXPECT_EQ(Root("%p = f32[2] parameter(0)\n%z = f32[] constant(-0)\n"
                 "%b = f32[2] broadcast(f32[] %z), dimensions={}\n"
                 "ROOT %a = f32[2] add(f32[2] %p, f32[2] %b)"),
            "%p = f32[2] parameter(0) #1");
}

TEST(PassAlgsimp, MultiplyByOne) {
  EXPECT_EQ(Root("%p = f32[2,3] parameter(0)\n%one = f32[] constant(1)\n"
                 "%b = f32[2,3] broadcast(f32[] %one), dimensions={}\n"
                 "ROOT %m = f32[2,3] multiply(f32[2,3] %b, f32[2,3] %p)"),
            "%p = f32[2,3] parameter(0) #1");
  EXPECT_EQ(Root("%p = s32[2] parameter(0)\n%one = s32[2] constant({1, 1})\n"
                 "ROOT %m = s32[2] multiply(s32[2] %p, s32[2] %one)"),
            "%p = s32[2] parameter(0) #1");
}

TEST(PassAlgsimp, MultiplyByZeroIntegersOnly) {
  EXPECT_EQ(Root("%p = s32[2] parameter(0)\n%z = s32[2] constant({0, 0})\n"
                 "ROOT %m = s32[2] multiply(s32[2] %p, s32[2] %z)"),
            "%z = s32[2] constant({0, 0}) #2");
  // NaN * 0 is NaN: float multiplies by zero stay.
  EXPECT_EQ(Root("%p = f32[2] parameter(0)\n%z = f32[2] constant({0, 0})\n"
                 "ROOT %m = f32[2] multiply(f32[2] %p, f32[2] %z)"),
            "%m = f32[2] multiply(f32[2] %p, f32[2] %z) #3");
}

TEST(PassAlgsimp, WideningConvertNarrowedBackIsItsOperand) {
  // bf16 -> f32 -> bf16 (a whole vreg, which the kernels read exactly) and f32 -> f64 -> f32
  // give back every value.
  EXPECT_EQ(Root("%p = bf16[8,128] parameter(0)\n%w = f32[8,128] convert(bf16[8,128] %p)\n"
                 "%n = bf16[8,128] convert(f32[8,128] %w)\n"
                 "ROOT %r = bf16[8,128] negate(bf16[8,128] %n)"),
            "%r = bf16[8,128] negate(bf16[8,128] %p) #2");
  EXPECT_EQ(Root("%p = f32[4] parameter(0)\n%w = f64[4] convert(f32[4] %p)\n"
                 "ROOT %n = f32[4] convert(f64[4] %w)"),
            "%p = f32[4] parameter(0) #1");
  // Narrowing first rounds (f32 -> bf16 -> f32), and s32 -> f32 is not exact: both stay.
  bool changed = true;
  EXPECT_EQ(Root("%p = f32[4] parameter(0)\n%n = bf16[4] convert(f32[4] %p)\n"
                 "ROOT %w = f32[4] convert(bf16[4] %n)",
                 &changed),
            "%w = f32[4] convert(bf16[4] %n) #3");
  EXPECT_FALSE(changed);
  EXPECT_EQ(Root("%p = s32[4] parameter(0)\n%f = f32[4] convert(s32[4] %p)\n"
                 "ROOT %s = s32[4] convert(f32[4] %f)"),
            "%s = s32[4] convert(f32[4] %f) #3");
  // A ragged bf16 value (the kernels read whole vregs of bf16 only) and a 1-byte one stay
  // behind their pair: reading them directly would leave values uncomputed (difftest seed
  // 55).
  EXPECT_EQ(Root("%p = bf16[3] parameter(0)\n%w = f32[3] convert(bf16[3] %p)\n"
                 "ROOT %n = bf16[3] convert(f32[3] %w)"),
            "%n = bf16[3] convert(f32[3] %w) #3");
  EXPECT_EQ(Root("%p = s8[4] parameter(0)\n%w = s32[4] convert(s8[4] %p)\n"
                 "ROOT %n = s8[4] convert(s32[4] %w)"),
            "%n = s8[4] convert(s32[4] %w) #3");
}

TEST(PassAlgsimp, ReshapeOfReshape) {
  EXPECT_EQ(Root("%p = f32[2,3,4] parameter(0)\n%r1 = f32[6,4] reshape(f32[2,3,4] %p)\n"
                 "ROOT %r2 = f32[24] reshape(f32[6,4] %r1)"),
            "%reshape = f32[24] reshape(f32[2,3,4] %p) #2");
  EXPECT_EQ(Root("%p = f32[2,3] parameter(0)\n%r1 = f32[6] reshape(f32[2,3] %p)\n"
                 "ROOT %r2 = f32[2,3] reshape(f32[6] %r1)"),
            "%p = f32[2,3] parameter(0) #1");
}

TEST(PassAlgsimp, TransposeOfTransposeComposes) {
  EXPECT_EQ(Root("%p = f32[2,3,4] parameter(0)\n"
                 "%t1 = f32[3,4,2] transpose(f32[2,3,4] %p), dimensions={1,2,0}\n"
                 "ROOT %t2 = f32[4,2,3] transpose(f32[3,4,2] %t1), dimensions={1,2,0}"),
            "%transpose = f32[4,2,3] transpose(f32[2,3,4] %p), dimensions={2,0,1} #2");
  EXPECT_EQ(Root("%p = f32[2,3] parameter(0)\n"
                 "%t1 = f32[3,2] transpose(f32[2,3] %p), dimensions={1,0}\n"
                 "ROOT %t2 = f32[2,3] transpose(f32[3,2] %t1), dimensions={1,0}"),
            "%p = f32[2,3] parameter(0) #1");
}

TEST(PassAlgsimp, IdentityDataMovementRemoved) {
  const std::string p = "%p = f32[2,3] parameter(0)\n";
  const std::string want = "%p = f32[2,3] parameter(0) #1";
  EXPECT_EQ(Root(p + "ROOT %t = f32[2,3] transpose(f32[2,3] %p), dimensions={0,1}"), want);
  EXPECT_EQ(Root(p + "ROOT %r = f32[2,3] reshape(f32[2,3] %p)"), want);
  EXPECT_EQ(Root(p + "ROOT %b = f32[2,3] broadcast(f32[2,3] %p), dimensions={0,1}"), want);
  EXPECT_EQ(Root(p + "ROOT %c = f32[2,3] convert(f32[2,3] %p)"), want);
  EXPECT_EQ(Root(p + "ROOT %s = f32[2,3] slice(f32[2,3] %p), slice={[0:2], [0:3]}"), want);
  EXPECT_EQ(Root(p + "ROOT %c = f32[2,3] concatenate(f32[2,3] %p), dimensions={0}"), want);
  EXPECT_EQ(Root(p + "%z = f32[] constant(0)\n"
                     "ROOT %q = f32[2,3] pad(f32[2,3] %p, f32[] %z), padding=0_0x0_0"),
            want);
}

TEST(PassAlgsimp, NonIdentitiesKept) {
  bool changed = true;
  const std::string p = "%p = f32[2,3] parameter(0)\n";
  EXPECT_EQ(Root(p + "ROOT %s = f32[2,2] slice(f32[2,3] %p), slice={[0:2], [0:2]}", &changed),
            "%s = f32[2,2] slice(f32[2,3] %p), slice={[0:2], [0:2]} #2");
  EXPECT_FALSE(changed);
  EXPECT_EQ(Root(p + "ROOT %c = s32[2,3] convert(f32[2,3] %p)", &changed),
            "%c = s32[2,3] convert(f32[2,3] %p) #2");
  EXPECT_FALSE(changed);
  EXPECT_EQ(Root(p + "%z = f32[] constant(0)\n"
                     "ROOT %q = f32[2,4] pad(f32[2,3] %p, f32[] %z), padding=0_0x0_1",
                 &changed),
            "%q = f32[2,4] pad(f32[2,3] %p, f32[] %z), padding=0_0x0_1 #3");
  EXPECT_FALSE(changed);
}

TEST(PassAlgsimp, LayoutChangingReshapeKept) {
  bool changed = true;
  EXPECT_EQ(Root("%p = f32[2,3]{0,1} parameter(0)\nROOT %r = f32[2,3]{1,0} reshape(f32[2,3]{0,1} "
                 "%p)",
                 &changed),
            "%r = f32[2,3]{1,0} reshape(f32[2,3]{0,1} %p) #2");
  EXPECT_FALSE(changed);
}

// jax.checkpoint's barrier orders nothing in tpusim (kernels run in program order); the
// element then read from the tuple is the tuple's operand.
TEST(PassAlgsimp, OptBarrierIsItsOperand) {
  EXPECT_EQ(Root("%p = f32[4] parameter(0)\n%q = s32[2] parameter(1)\n"
                 "%t = (f32[4], s32[2]) tuple(f32[4] %p, s32[2] %q)\n"
                 "%b = (f32[4], s32[2]) opt-barrier((f32[4], s32[2]) %t)\n"
                 "%g = f32[4] get-tuple-element((f32[4], s32[2]) %b), index=0\n"
                 "ROOT %n = f32[4] negate(f32[4] %g)"),
            "%n = f32[4] negate(f32[4] %p) #3");
}

// The partitioner's batch-norm expansion returns tuple(y, mean, var): each element read is
// the tuple's operand, so y fuses with its readers (XLA's HandleGetTupleElement).
TEST(PassAlgsimp, GetTupleElementOfATupleIsItsOperand) {
  EXPECT_EQ(Root("%p = f32[4] parameter(0)\n%q = s32[2] parameter(1)\n"
                 "%t = (f32[4], s32[2]) tuple(f32[4] %p, s32[2] %q)\n"
                 "%g = s32[2] get-tuple-element((f32[4], s32[2]) %t), index=1\n"
                 "ROOT %n = s32[2] negate(s32[2] %g)"),
            "%n = s32[2] negate(s32[2] %q) #3");
  // an element of anything else stays
  EXPECT_EQ(Root("%p = (f32[4], s32[2]) parameter(0)\n"
                 "%g = s32[2] get-tuple-element((f32[4], s32[2]) %p), index=1\n"
                 "ROOT %n = s32[2] negate(s32[2] %g)"),
            "%n = s32[2] negate(s32[2] %g) #3");
}

TEST(PassAlgsimp, ChainsSimplifyTogether) {
  EXPECT_EQ(Root("%p = s32[8] parameter(0)\n%r1 = s32[2,4] reshape(s32[8] %p)\n"
                 "%r2 = s32[4,2] reshape(s32[2,4] %r1)\n%r3 = s32[8] reshape(s32[4,2] %r2)\n"
                 "%one = s32[] constant(1)\n%b = s32[8] broadcast(s32[] %one), dimensions={}\n"
                 "%m = s32[8] multiply(s32[8] %r3, s32[8] %b)\n"
                 "ROOT %n = s32[8] negate(s32[8] %m)"),
            "%n = s32[8] negate(s32[8] %p) #2");
}

}  // namespace
}  // namespace tpusim::passes
