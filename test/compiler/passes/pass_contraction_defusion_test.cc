// Contraction defusion: IR text in, IR text out; fusions without a contraction stay.
#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/contraction_defusion.h"
#include "compiler/passes/dce.h"

namespace tpusim::passes {
namespace {

// Parses, defuses, drops what nothing calls any more, verifies; the printed entry.
std::string Defuse(const std::string& text, bool* changed) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  hlo::Result<bool> r = ContractionDefusionPass().Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  *changed = r.ok() && *r;
  EXPECT_TRUE(DcePass().Run(*m).ok());
  hlo::Status v = hlo::VerifyModule(*m);
  EXPECT_TRUE(v.ok()) << v.message();
  EXPECT_EQ(m->computations().size(), 2u) << hlo::PrintModule(*m);  // entry and the reducer
  return hlo::PrintComputation(*m->entry());
}

constexpr const char* kOutputFusion = R"(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
%fused_dot (p0: f32[64,256], p1: f32[256,128], p2: f32[128]) -> f32[64,128] {
  %p0 = f32[64,256] parameter(0)
  %p1 = f32[256,128] parameter(1)
  %p2 = f32[128] parameter(2)
  %d = f32[64,128] dot(f32[64,256] %p0, f32[256,128] %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %b = f32[64,128] broadcast(f32[128] %p2), dimensions={1}
  ROOT %r = f32[64,128] add(f32[64,128] %d, f32[64,128] %b)
}
ENTRY %main (x: f32[64,256], w: f32[256,128], bias: f32[128]) -> f32[64] {
  %x = f32[64,256] parameter(0)
  %w = f32[256,128] parameter(1)
  %bias = f32[128] parameter(2)
  %out = f32[64,128] fusion(f32[64,256] %x, f32[256,128] %w, f32[128] %bias), kind=kOutput, calls=%fused_dot
  %zero = f32[] constant(0)
  ROOT %sum = f32[64] reduce(f32[64,128] %out, f32[] %zero), dimensions={1}, to_apply=%add
})";

TEST(PassContractionDefusion, InlinesAnOutputFusionAndKeepsItsName) {
  bool changed = false;
  EXPECT_EQ(Defuse(kOutputFusion, &changed),
            R"(ENTRY %main (x: f32[64,256], w: f32[256,128], bias: f32[128]) -> f32[64] {
  %x = f32[64,256] parameter(0)
  %w = f32[256,128] parameter(1)
  %bias = f32[128] parameter(2)
  %zero = f32[] constant(0)
  %d = f32[64,128] dot(f32[64,256] %x, f32[256,128] %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %b = f32[64,128] broadcast(f32[128] %bias), dimensions={1}
  %out = f32[64,128] add(f32[64,128] %d, f32[64,128] %b)
  ROOT %sum = f32[64] reduce(f32[64,128] %out, f32[] %zero), dimensions={1}, to_apply=%add
}
)");
  EXPECT_TRUE(changed);
}

TEST(PassContractionDefusion, LeavesLoopFusionsAlone) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(R"(HloModule t
%f (p0: f32[8,128]) -> f32[8,128] {
  %p0 = f32[8,128] parameter(0)
  ROOT %e = f32[8,128] exponential(f32[8,128] %p0)
}
ENTRY %main (x: f32[8,128]) -> f32[8,128] {
  %x = f32[8,128] parameter(0)
  ROOT %y = f32[8,128] fusion(f32[8,128] %x), kind=kLoop, calls=%f
})");
  ASSERT_TRUE(m.ok());
  hlo::Result<bool> r = ContractionDefusionPass().Run(*m);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
}

}  // namespace
}  // namespace tpusim::passes
