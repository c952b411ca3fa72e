// All-reduce combiner: IR text in, IR text out. Independent all-reduces of one reducer and
// one set of groups become one tuple all-reduce (used early or late); one that needs
// another's result, another reducer or the threshold starts a new one; values unchanged.
#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/all_reduce_combiner.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim::passes {
namespace {

// Parses, combines, verifies; the printed entry ("" when nothing changed).
std::string Combine(const std::string& text, int64_t threshold = kDefaultAllReduceCombineBytes) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  hlo::Result<bool> r = AllReduceCombinerPass(threshold).Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok() || !*r) return "";
  hlo::Status v = hlo::VerifyModule(*m);
  EXPECT_TRUE(v.ok()) << v.message();
  return hlo::PrintComputation(*m->entry());
}

constexpr char kHeader[] = R"(HloModule t, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
%max (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %c, f32[] %d)
}
)";

// Gradients of two layers: the first is used (transposed) before the second is computed,
// yet neither needs the other, so one ring carries both, before the transpose.
TEST(PassAllReduceCombiner, IndependentGradientsShareOneRing) {
  const std::string text = std::string(kHeader) + R"(
ENTRY %e (x: f32[8,16], y: f32[8,16]) -> (f32[16,16], f32[16,16]) {
  %x = f32[8,16] parameter(0)
  %y = f32[8,16] parameter(1)
  %g1 = f32[16,16] dot(f32[8,16] %x, f32[8,16] %x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %r1 = f32[16,16] all-reduce(f32[16,16] %g1), replica_groups={}, to_apply=%add
  %t1 = f32[16,16] transpose(f32[16,16] %r1), dimensions={1,0}
  %g2 = f32[16,16] dot(f32[8,16] %y, f32[8,16] %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %r2 = f32[16,16] all-reduce(f32[16,16] %g2), replica_groups={}, to_apply=%add
  ROOT %t = (f32[16,16], f32[16,16]) tuple(f32[16,16] %t1, f32[16,16] %r2)
}
)";
  const std::string out = Combine(text);
  EXPECT_NE(out.find("%r1.combined = (f32[16,16], f32[16,16]) all-reduce(f32[16,16] %g1, "
                     "f32[16,16] %g2), replica_groups={}, to_apply=%add"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%r1 = f32[16,16] get-tuple-element("), std::string::npos);
  EXPECT_NE(out.find("%r2 = f32[16,16] get-tuple-element("), std::string::npos);
  EXPECT_LT(out.find("%g2 = "), out.find("%t1 = "));  // computed before the first use
  testing::ExpectMatch(text);                         // and the same values on the board
}

// r2 needs r1's result; r3 reduces by another function; r4 joins r1 (or, under a threshold
// of one operand, nothing joins).
TEST(PassAllReduceCombiner, DependentOtherReducerOrTooLargeStayApart) {
  const std::string text = std::string(kHeader) + R"(
ENTRY %e (x: f32[64], y: f32[64]) -> (f32[64], f32[64], f32[64]) {
  %x = f32[64] parameter(0)
  %y = f32[64] parameter(1)
  %r1 = f32[64] all-reduce(f32[64] %x), replica_groups={}, to_apply=%add
  %n = f32[64] negate(f32[64] %r1)
  %r2 = f32[64] all-reduce(f32[64] %n), replica_groups={}, to_apply=%add
  %r3 = f32[64] all-reduce(f32[64] %y), replica_groups={}, to_apply=%max
  %r4 = f32[64] all-reduce(f32[64] %y), replica_groups={}, to_apply=%add
  %s = f32[64] add(f32[64] %r2, f32[64] %r4)
  ROOT %t = (f32[64], f32[64], f32[64]) tuple(f32[64] %s, f32[64] %r3, f32[64] %r1)
}
)";
  const std::string out = Combine(text);
  EXPECT_NE(out.find("%r2.combined = (f32[64], f32[64]) all-reduce(f32[64] %n, f32[64] %y)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%r1 = f32[64] all-reduce("), std::string::npos);
  EXPECT_NE(out.find("%r3 = f32[64] all-reduce("), std::string::npos);
  EXPECT_EQ(Combine(text, /*threshold=*/256), "");  // one f32[64] operand each
  testing::ExpectMatch(text);
}

}  // namespace
}  // namespace tpusim::passes
