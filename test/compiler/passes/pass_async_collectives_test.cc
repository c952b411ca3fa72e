// async-collective-creator: IR text in, IR text out. All-reduces and all-gathers become
// start/done pairs in a latency-hiding order; a collective inside a loop keeps them
// synchronous; a schedule that would not fit HBM leaves each done after its start.
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
std::string Schedule(const std::string& text, int64_t capacity = int64_t{16} << 30,
                     collectives::RingCostModel costs = {}) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  hlo::Result<bool> r = AsyncCollectiveCreatorPass(capacity, costs).Run(*m);
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

// An all-gather of one array becomes XLA's all-gather-start (a tuple of its operand and
// result) and an all-gather-done; the dot that does not need it runs while it is in flight.
TEST(PassAsyncCollectives, AnAllGatherBecomesATupleStartAndADone) {
  EXPECT_EQ(
      Schedule(R"(HloModule t, replica_count=8
ENTRY %e (w: f32[16,128], x: f32[64,64], v: f32[64,64]) -> (f32[128,128], f32[64,64]) {
  %w = f32[16,128] parameter(0)
  %x = f32[64,64] parameter(1)
  %v = f32[64,64] parameter(2)
  %g = f32[128,128] all-gather(f32[16,128] %w), dimensions={0}, replica_groups={}
  %d = f32[64,64] dot(f32[64,64] %x, f32[64,64] %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[128,128], f32[64,64]) tuple(f32[128,128] %g, f32[64,64] %d)
}
)"),
      R"(ENTRY %e (w: f32[16,128], x: f32[64,64], v: f32[64,64]) -> (f32[128,128], f32[64,64]) {
  %w = f32[16,128] parameter(0)
  %g = (f32[16,128], f32[128,128]) all-gather-start(f32[16,128] %w), dimensions={0}, replica_groups={}
  %x = f32[64,64] parameter(1)
  %v = f32[64,64] parameter(2)
  %d = f32[64,64] dot(f32[64,64] %x, f32[64,64] %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %g.done = f32[128,128] all-gather-done((f32[16,128], f32[128,128]) %g)
  ROOT %t = (f32[128,128], f32[64,64]) tuple(f32[128,128] %g.done, f32[64,64] %d)
}
)");
}

// Two all-reduces ready at once and two long kernels: without a cost model the first done
// waits until nothing else is ready, so both kernels run beside the first all-reduce and none
// beside the second. With one, the first kernel (74 us at HBM bandwidth) covers the first
// all-reduce's estimated time (21 us: fourteen ring steps of 1.5 us),
// so its done comes next and the second starts, beside the second kernel.
TEST(PassAsyncCollectives, ACoveredDoneLetsTheNextStartGo) {
  const std::string module = std::string(kAdd) + R"(
ENTRY %e (x: f32[1024], y: f32[1024], z: f32[4194304]) -> (f32[1024], f32[4194304]) {
  %x = f32[1024] parameter(0)
  %y = f32[1024] parameter(1)
  %z = f32[4194304] parameter(2)
  %ar1 = f32[1024] all-reduce(f32[1024] %x), replica_groups={}, to_apply=%add
  %ar2 = f32[1024] all-reduce(f32[1024] %y), replica_groups={}, to_apply=%add
  %e1 = f32[4194304] exponential(f32[4194304] %z)
  %e2 = f32[4194304] log(f32[4194304] %e1)
  %s = f32[1024] add(f32[1024] %ar1, f32[1024] %ar2)
  ROOT %t = (f32[1024], f32[4194304]) tuple(f32[1024] %s, f32[4194304] %e2)
}
)";
  auto at = [](const std::string& out, const char* what) { return out.find(what); };
  const std::string late = Schedule(module);
  EXPECT_LT(at(late, "%e2 = "), at(late, "%ar1.done = ")) << late;
  EXPECT_LT(at(late, "%ar1.done = "), at(late, "%ar2 = ")) << late;
  // v3-8's core: 61.6 TFLOP/s, 450 GB/s of HBM, 70 GB/s links, 1.5 us per ring step.
  const std::string covered =
      Schedule(module, int64_t{16} << 30, {8, 61.6e12, 450e9, 70e9, 1.5e-6});
  EXPECT_LT(at(covered, "%ar1 = "), at(covered, "%e1 = ")) << covered;
  EXPECT_LT(at(covered, "%e1 = "), at(covered, "%ar1.done = ")) << covered;
  EXPECT_LT(at(covered, "%ar1.done = "), at(covered, "%ar2 = ")) << covered;
  EXPECT_LT(at(covered, "%ar2 = "), at(covered, "%e2 = ")) << covered;
  EXPECT_LT(at(covered, "%e2 = "), at(covered, "%ar2.done = ")) << covered;
}

// A reduce-scatter of one array becomes XLA's reduce-scatter-start (its async wrapper:
// ((operand), result)) and a reduce-scatter-done.
TEST(PassAsyncCollectives, AReduceScatterBecomesXlasAsyncPair) {
  const std::string out = Schedule(std::string(kAdd) + R"(
ENTRY %e (g: f32[128,64]) -> f32[16,64] {
  %g = f32[128,64] parameter(0)
  ROOT %r = f32[16,64] reduce-scatter(f32[128,64] %g), dimensions={0}, replica_groups={}, to_apply=%add
}
)");
  EXPECT_NE(out.find("%r = ((f32[128,64]), f32[16,64]) reduce-scatter-start(f32[128,64] %g)"),
            std::string::npos)
      << out;
  EXPECT_NE(
      out.find("ROOT %r.done = f32[16,64] reduce-scatter-done(((f32[128,64]), f32[16,64]) %r)"),
      std::string::npos)
      << out;
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
