// Dead code elimination: what it removes and what it must keep.
#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/dce.h"

namespace tpusim::passes {
namespace {

hlo::HloModule Parse(const std::string& text) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(m).value();
}

TEST(PassDce, RemovesUnusedInstructions) {
  hlo::HloModule m = Parse(R"(HloModule t
ENTRY %e {
  %p = f32[4] parameter(0)
  %dead = f32[4] negate(f32[4] %p)
  %dead2 = f32[4] exponential(f32[4] %dead)
  ROOT %r = f32[4] abs(f32[4] %p)
})");
  hlo::Result<bool> changed = DcePass().Run(m);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(m.entry()->instructions().size(), 2u);
  EXPECT_EQ(m.entry()->Find("dead"), nullptr);
  EXPECT_EQ(m.entry()->root()->name(), "r");
  EXPECT_TRUE(hlo::VerifyModule(m).ok());
}

TEST(PassDce, KeepsParametersRootAndSideEffects) {
  hlo::HloModule m = Parse(R"(HloModule t, replica_count=2
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e {
  %p = f32[4] parameter(0)
  %unused = f32[4] parameter(1)
  %lo = f32[] constant(0)
  %hi = f32[] constant(1)
  %rng = f32[4] rng(f32[] %lo, f32[] %hi), distribution=rng_uniform
  %ar = f32[4] all-reduce(f32[4] %p), replica_groups={{0,1}}, to_apply=%add
  ROOT %r = f32[4] negate(f32[4] %p)
})");
  hlo::Result<bool> changed = DcePass().Run(m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_NE(m.entry()->Find("unused"), nullptr);
  EXPECT_NE(m.entry()->Find("rng"), nullptr);
  EXPECT_NE(m.entry()->Find("ar"), nullptr);
  EXPECT_NE(m.Find("add"), nullptr);
}

TEST(PassDce, RemovesUnreachableComputations) {
  hlo::HloModule m = Parse(R"(HloModule t
%unused (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(f32[] %a, f32[] %b)
}
ENTRY %e {
  %p = f32[4] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4] %p, f32[] %z), dimensions={0}, to_apply=%max
})");
  hlo::Result<bool> changed = DcePass().Run(m);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(m.Find("unused"), nullptr);
  EXPECT_NE(m.Find("max"), nullptr);
  EXPECT_EQ(m.computations().size(), 2u);
  EXPECT_TRUE(hlo::VerifyModule(m).ok());
  // The output parses again and prints the same.
  std::string text = hlo::PrintModule(m);
  EXPECT_EQ(hlo::PrintModule(Parse(text)), text);
}

TEST(PassDce, DeadInstructionsInsideCalledComputations) {
  hlo::HloModule m = Parse(R"(HloModule t
%body (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %junk = f32[4] sine(f32[4] %x)
  ROOT %y = f32[4] negate(f32[4] %x)
}
ENTRY %e {
  %p = f32[4] parameter(0)
  ROOT %c = f32[4] call(f32[4] %p), to_apply=%body
})");
  hlo::Result<bool> changed = DcePass().Run(m);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(m.Find("body")->Find("junk"), nullptr);
  EXPECT_EQ(m.entry()->root()->to_apply(), m.Find("body"));
}

TEST(PassDce, CallWithCollectiveInsideIsKept) {
  hlo::HloModule m = Parse(R"(HloModule t, replica_count=2
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
%body (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %ar = f32[4] all-reduce(f32[4] %x), replica_groups={{0,1}}, to_apply=%add
}
ENTRY %e {
  %p = f32[4] parameter(0)
  %c = f32[4] call(f32[4] %p), to_apply=%body
  ROOT %r = f32[4] negate(f32[4] %p)
})");
  hlo::Result<bool> changed = DcePass().Run(m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_NE(m.entry()->Find("c"), nullptr);
}

}  // namespace
}  // namespace tpusim::passes
