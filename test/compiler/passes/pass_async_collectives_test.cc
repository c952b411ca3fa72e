// async-collective-creator: IR text in, IR text out. All-reduces become start/done pairs in a
// latency-hiding order; a collective inside a loop keeps them synchronous; a schedule that
// would not fit HBM leaves each done after its start.
#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/passes/async_collectives.h"
#include "test/compiler/passes/pass_test_util.h"

namespace tpusim::passes {
namespace {

constexpr const char* kAdd = R"(HloModule t, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
)";

// Two gradients, each all-reduced and applied to a weight; the second needs work the first
// does not.
constexpr const char* kTwoGradients = R"(
ENTRY %e (x: f32[1024], w: f32[1024], y: f32[1024]) -> (f32[1024], f32[1024]) {
  %x = f32[1024] parameter(0)
  %w = f32[1024] parameter(1)
  %y = f32[1024] parameter(2)
  %g1 = f32[1024] multiply(f32[1024] %x, f32[1024] %x)
  %ar1 = f32[1024] all-reduce(f32[1024] %g1), replica_groups={}, to_apply=%add
  %u1 = f32[1024] subtract(f32[1024] %w, f32[1024] %ar1)
  %a = f32[1024] exponential(f32[1024] %y)
  %b = f32[1024] log(f32[1024] %a)
  %g2 = f32[1024] add(f32[1024] %b, f32[1024] %x)
  %ar2 = f32[1024] all-reduce(f32[1024] %g2), replica_groups={}, to_apply=%add
  %u2 = f32[1024] subtract(f32[1024] %w, f32[1024] %ar2)
  ROOT %t = (f32[1024], f32[1024]) tuple(f32[1024] %u1, f32[1024] %u2)
}
)";

// The entry after the pass (empty when it did not change the module).
std::string Schedule(const std::string& text, int64_t capacity = int64_t{16} << 30) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  hlo::Result<bool> r = AsyncCollectiveCreatorPass(capacity).Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok() || !*r) return "";
  testing::ExpectVerifiesAndReparses(*m);
  return hlo::PrintComputation(*m->entry());
}

// The first all-reduce starts as soon as its gradient exists; the work the second gradient
// needs runs while it is in flight; its done waits until nothing else can run; the second
// starts after it (one in flight) and the first update runs beside it.
TEST(PassAsyncCollectives, StartsEarlyDonesLateOneInFlight) {
  EXPECT_EQ(Schedule(std::string(kAdd) + kTwoGradients),
            R"(ENTRY %e (x: f32[1024], w: f32[1024], y: f32[1024]) -> (f32[1024], f32[1024]) {
  %x = f32[1024] parameter(0)
  %g1 = f32[1024] multiply(f32[1024] %x, f32[1024] %x)
  %ar1 = f32[1024] all-reduce-start(f32[1024] %g1), replica_groups={}, to_apply=%add
  %y = f32[1024] parameter(2)
  %a = f32[1024] exponential(f32[1024] %y)
  %b = f32[1024] log(f32[1024] %a)
  %g2 = f32[1024] add(f32[1024] %b, f32[1024] %x)
  %w = f32[1024] parameter(1)
  %ar1.done = f32[1024] all-reduce-done(f32[1024] %ar1)
  %ar2 = f32[1024] all-reduce-start(f32[1024] %g2), replica_groups={}, to_apply=%add
  %u1 = f32[1024] subtract(f32[1024] %w, f32[1024] %ar1.done)
  %ar2.done = f32[1024] all-reduce-done(f32[1024] %ar2)
  %u2 = f32[1024] subtract(f32[1024] %w, f32[1024] %ar2.done)
  ROOT %t = (f32[1024], f32[1024]) tuple(f32[1024] %u1, f32[1024] %u2)
}
)");
}

// Over capacity with the overlapping order: each done follows its start, in the given order.
TEST(PassAsyncCollectives, AScheduleOverCapacityKeepsEachDoneAfterItsStart) {
  const std::string out = Schedule(std::string(kAdd) + kTwoGradients, /*capacity=*/1024);
  EXPECT_NE(out.find("all-reduce-start(f32[1024] %g1), replica_groups={}, to_apply=%add\n"
                     "  %ar1.done = f32[1024] all-reduce-done(f32[1024] %ar1)\n"
                     "  %u1 = "),
            std::string::npos)
      << out;
}

// The collective stream runs the entry's collectives once per step: an all-reduce in a loop
// body keeps every all-reduce of the module synchronous.
TEST(PassAsyncCollectives, ACollectiveInALoopKeepsTheModuleSynchronous) {
  EXPECT_EQ(Schedule(std::string(kAdd) + R"(
%body (p: (s32[], f32[64])) -> (s32[], f32[64]) {
  %p = (s32[], f32[64]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[64]) %p), index=0
  %v = f32[64] get-tuple-element((s32[], f32[64]) %p), index=1
  %one = s32[] constant(1)
  %j = s32[] add(s32[] %i, s32[] %one)
  %r = f32[64] all-reduce(f32[64] %v), replica_groups={}, to_apply=%add
  ROOT %n = (s32[], f32[64]) tuple(s32[] %j, f32[64] %r)
}
%cond (q: (s32[], f32[64])) -> pred[] {
  %q = (s32[], f32[64]) parameter(0)
  %k = s32[] get-tuple-element((s32[], f32[64]) %q), index=0
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(s32[] %k, s32[] %three), direction=LT
}
ENTRY %e (x: f32[64]) -> (s32[], f32[64]) {
  %x = f32[64] parameter(0)
  %s = f32[64] all-reduce(f32[64] %x), replica_groups={}, to_apply=%add
  %zero = s32[] constant(0)
  %init = (s32[], f32[64]) tuple(s32[] %zero, f32[64] %s)
  ROOT %w = (s32[], f32[64]) while((s32[], f32[64]) %init), condition=%cond, body=%body
}
)"),
            "");
}

}  // namespace
}  // namespace tpusim::passes
