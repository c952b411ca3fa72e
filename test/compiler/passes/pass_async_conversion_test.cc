// Async conversion: IR text in, IR text out; a start read by more than its done.
#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/async_conversion.h"
#include "compiler/passes/dce.h"

namespace tpusim::passes {
namespace {

// Parses, converts, drops what nothing uses, verifies; the printed entry.
std::string Convert(const std::string& text) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  hlo::Result<bool> r = AsyncConversionPass().Run(*m);
  EXPECT_TRUE(r.ok() && *r) << (r.ok() ? "unchanged" : r.status().message());
  EXPECT_TRUE(DcePass().Run(*m).ok());
  hlo::Status v = hlo::VerifyModule(*m);
  EXPECT_TRUE(v.ok()) << v.message();
  return hlo::PrintComputation(*m->entry());
}

TEST(PassAsyncConversion, PairsBecomeTheirSynchronousOps) {
  EXPECT_EQ(Convert(R"(HloModule t, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e (x: f32[64], y: f32[8]) -> (f32[64], f32[64], f32[64]) {
  %x = f32[64] parameter(0)
  %y = f32[8] parameter(1)
  %ars = f32[64] all-reduce-start(f32[64] %x), replica_groups={}, to_apply=%add
  %ard = f32[64] all-reduce-done(f32[64] %ars)
  %ags = (f32[8], f32[64]) all-gather-start(f32[8] %y), dimensions={0}, replica_groups={}
  %agd = f32[64] all-gather-done((f32[8], f32[64]) %ags)
  %cs = (f32[64], f32[64], u32[]) copy-start(f32[64] %ard)
  %cd = f32[64] copy-done((f32[64], f32[64], u32[]) %cs)
  ROOT %t = (f32[64], f32[64], f32[64]) tuple(f32[64] %ard, f32[64] %agd, f32[64] %cd)
})"),
            R"(ENTRY %e (x: f32[64], y: f32[8]) -> (f32[64], f32[64], f32[64]) {
  %x = f32[64] parameter(0)
  %y = f32[8] parameter(1)
  %ars = f32[64] all-reduce(f32[64] %x), replica_groups={}, to_apply=%add
  %ags = f32[64] all-gather(f32[8] %y), dimensions={0}, replica_groups={}
  %cs = f32[64] copy(f32[64] %ars)
  ROOT %t = (f32[64], f32[64], f32[64]) tuple(f32[64] %ars, f32[64] %ags, f32[64] %cs)
}
)");
}

// XLA's async reduce-scatter, printed as its own op with ((operands), result).
TEST(PassAsyncConversion, AReduceScatterStartBecomesAReduceScatter) {
  EXPECT_EQ(Convert(R"(HloModule t, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e (x: f32[64]) -> f32[8] {
  %x = f32[64] parameter(0)
  %rss = ((f32[64]), f32[8]) reduce-scatter-start(f32[64] %x), dimensions={0}, replica_groups={}, to_apply=%add
  ROOT %rsd = f32[8] reduce-scatter-done(((f32[64]), f32[8]) %rss)
})"),
            R"(ENTRY %e (x: f32[64]) -> f32[8] {
  %x = f32[64] parameter(0)
  ROOT %rss = f32[8] reduce-scatter(f32[64] %x), dimensions={0}, replica_groups={}, to_apply=%add
}
)");
}

// Element 0 of an all-gather-start (its operand) read beside the done: the tuple is rebuilt.
TEST(PassAsyncConversion, AStartReadBesideItsDoneIsATupleAgain) {
  const std::string out = Convert(R"(HloModule t, replica_count=8
ENTRY %e (y: f32[8]) -> (f32[8], f32[64]) {
  %y = f32[8] parameter(0)
  %ags = (f32[8], f32[64]) all-gather-start(f32[8] %y), dimensions={0}, replica_groups={}
  %own = f32[8] get-tuple-element((f32[8], f32[64]) %ags), index=0
  %agd = f32[64] all-gather-done((f32[8], f32[64]) %ags)
  ROOT %t = (f32[8], f32[64]) tuple(f32[8] %own, f32[64] %agd)
})");
  EXPECT_NE(out.find("%ags.tuple = (f32[8], f32[64]) tuple(f32[8] %y, f32[64] %ags)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%ags = f32[64] all-gather(f32[8] %y)"), std::string::npos) << out;
}

}  // namespace
}  // namespace tpusim::passes
