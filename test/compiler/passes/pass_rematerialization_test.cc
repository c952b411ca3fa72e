// rematerialization, IR in and IR out: values held across the crowded point of a program that
// does not fit are recomputed before their next reader, and only then.
#include "compiler/passes/rematerialization.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/passes/memory.h"
#include "test/compiler/passes/pass_test_util.h"

namespace tpusim::passes {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

struct Outcome {
  bool changed = false;
  std::vector<std::string> order;  // the entry's instructions after the pass
  std::vector<Recomputation> recomputed;
  int64_t before = 0, after = 0;
  std::string printed;
};

Outcome Rematerialize(const std::string& text, int64_t capacity) {
  Outcome out;
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  RematerializationPass pass(capacity);
  hlo::Result<bool> r = pass.Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  out.changed = r.ok() && *r;
  testing::ExpectVerifiesAndReparses(*m);
  for (const auto& i : m->entry()->instructions()) out.order.push_back(i->name());
  out.recomputed = pass.recomputed();
  out.before = pass.peak_before(), out.after = pass.peak_after();
  out.printed = hlo::PrintModule(*m);
  return out;
}

// a (1 MiB) is read by the first dot and by the last; the dots between it hold two 1 MiB
// values beside the 5 MiB of parameters: 8 MiB live while d2 is made.
constexpr const char* kHeldAcrossDots = R"(HloModule m
ENTRY %e (x: f32[256,1024], w: f32[1024,1024]) -> f32[256,256] {
  %x = f32[256,1024] parameter(0)
  %w = f32[1024,1024] parameter(1)
  %a = f32[256,1024] exponential(%x)
  %d1 = f32[256,1024] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d2 = f32[256,1024] dot(%d1, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d3 = f32[256,1024] dot(%d2, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = f32[256,256] dot(%a, %d3), lhs_contracting_dims={1}, rhs_contracting_dims={1}
})";

TEST(PassRematerialization, AValueHeldAcrossTheCrowdedPointIsRecomputedBeforeItsNextReader) {
  const Outcome o = Rematerialize(kHeldAcrossDots, 7 * kMiB + kMiB / 2);
  EXPECT_TRUE(o.changed);
  EXPECT_EQ(o.order, (std::vector<std::string>{"x", "w", "a", "d1", "d2", "d3", "a.remat", "r"}));
  ASSERT_EQ(o.recomputed.size(), 1u);
  EXPECT_EQ(o.recomputed[0].value, "a");
  EXPECT_EQ(o.recomputed[0].clone, "a.remat");
  EXPECT_EQ(o.recomputed[0].before, "r");
  EXPECT_EQ(o.recomputed[0].bytes, kMiB);
  // The first dot still reads a; the last reads the copy, made from x again.
  EXPECT_NE(o.printed.find("%d1 = f32[256,1024] dot(f32[256,1024] %a,"), std::string::npos)
      << o.printed;
  EXPECT_NE(o.printed.find("%r = f32[256,256] dot(f32[256,1024] %a.remat,"), std::string::npos)
      << o.printed;
  // 8 MiB while d2 is made; after: 7 MiB there, 7.25 MiB at r (a's copy, d3 and r's 256 KiB).
  EXPECT_EQ(o.before, 8 * kMiB);
  EXPECT_EQ(o.after, 7 * kMiB + kMiB / 4);
}

TEST(PassRematerialization, AProgramThatFitsIsLeftAlone) {
  const Outcome o = Rematerialize(kHeldAcrossDots, 16 * kMiB);
  EXPECT_FALSE(o.changed);
  EXPECT_TRUE(o.recomputed.empty());
  EXPECT_EQ(o.order, (std::vector<std::string>{"x", "w", "a", "d1", "d2", "d3", "r"}));
  EXPECT_EQ(o.before, 0);  // every buffer at once fits: nothing was even planned
}

// a's operand t is freed once a is made: recomputing a later would keep t live across the
// dots, so a stays and the program is left for memory planning to refuse.
TEST(PassRematerialization, AValueWhoseOperandWouldLiveLongerIsNotRecomputed) {
  const std::string text = R"(HloModule m
ENTRY %e (x: f32[256,1024], w: f32[1024,1024]) -> f32[256,256] {
  %x = f32[256,1024] parameter(0)
  %w = f32[1024,1024] parameter(1)
  %t = f32[256,1024] negate(%x)
  %a = f32[256,1024] exponential(%t)
  %d1 = f32[256,1024] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d2 = f32[256,1024] dot(%d1, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d3 = f32[256,1024] dot(%d2, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = f32[256,256] dot(%a, %d3), lhs_contracting_dims={1}, rhs_contracting_dims={1}
})";
  const Outcome o = Rematerialize(text, 7 * kMiB + kMiB / 2);
  EXPECT_FALSE(o.changed);
  EXPECT_TRUE(o.recomputed.empty());
  EXPECT_EQ(o.before, 8 * kMiB);
  EXPECT_EQ(o.after, 8 * kMiB);
  EXPECT_EQ(o.order, (std::vector<std::string>{"x", "w", "t", "a", "d1", "d2", "d3", "r"}));
}

// A dot is not recomputed (MXU work): with only dots held across, nothing qualifies.
TEST(PassRematerialization, MatrixWorkIsNotRecomputed) {
  const std::string text = R"(HloModule m
ENTRY %e (x: f32[256,1024], w: f32[1024,1024]) -> f32[256,256] {
  %x = f32[256,1024] parameter(0)
  %w = f32[1024,1024] parameter(1)
  %a = f32[256,1024] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d1 = f32[256,1024] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d2 = f32[256,1024] dot(%d1, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d3 = f32[256,1024] dot(%d2, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = f32[256,256] dot(%a, %d3), lhs_contracting_dims={1}, rhs_contracting_dims={1}
})";
  const Outcome o = Rematerialize(text, 7 * kMiB + kMiB / 2);
  EXPECT_FALSE(o.changed);
  EXPECT_TRUE(o.recomputed.empty());
}

// A loop fusion is recomputed with a fused body of its own (XLA's fusion clones its body).
TEST(PassRematerialization, ALoopFusionIsRecomputedWithAFusedBodyOfItsOwn) {
  const std::string text = R"(HloModule m
%f (p: f32[256,1024]) -> f32[256,1024] {
  %p = f32[256,1024] parameter(0)
  %n = f32[256,1024] negate(%p)
  ROOT %e = f32[256,1024] exponential(%n)
}
ENTRY %e (x: f32[256,1024], w: f32[1024,1024]) -> f32[256,256] {
  %x = f32[256,1024] parameter(0)
  %w = f32[1024,1024] parameter(1)
  %a = f32[256,1024] fusion(%x), kind=kLoop, calls=%f
  %d1 = f32[256,1024] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d2 = f32[256,1024] dot(%d1, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d3 = f32[256,1024] dot(%d2, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = f32[256,256] dot(%a, %d3), lhs_contracting_dims={1}, rhs_contracting_dims={1}
})";
  const Outcome o = Rematerialize(text, 7 * kMiB + kMiB / 2);
  EXPECT_TRUE(o.changed);
  ASSERT_EQ(o.recomputed.size(), 1u);
  EXPECT_EQ(o.recomputed[0].clone, "a.remat");
  EXPECT_NE(o.printed.find("%a.remat = f32[256,1024] fusion(f32[256,1024] %x), "
                           "kind=kLoop, calls=%f.remat"),
            std::string::npos)
      << o.printed;
  EXPECT_NE(o.printed.find("%f.remat (p: f32[256,1024]) -> f32[256,1024]"), std::string::npos)
      << o.printed;
}

}  // namespace
}  // namespace tpusim::passes
