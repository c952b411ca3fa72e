// memory-scheduler, IR in and IR out: the entry's order after XLA's list scheduling, kept
// only when the memory plan needs less HBM with it.
#include "compiler/passes/memory_scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/passes/memory.h"
#include "test/compiler/passes/pass_test_util.h"

namespace tpusim::passes {
namespace {

// The entry's instruction names in order, after the pass; `changed` says whether it ran.
std::vector<std::string> Schedule(const std::string& text, bool* changed,
                                  MemorySchedulerPass* pass_out = nullptr) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  MemorySchedulerPass pass;
  hlo::Result<bool> r = pass.Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  *changed = r.ok() && *r;
  testing::ExpectVerifiesAndReparses(*m);
  if (pass_out) *pass_out = pass;
  std::vector<std::string> names;
  for (const auto& i : m->entry()->instructions()) names.push_back(i->name());
  return names;
}

// Two 4 MiB values, each summed: written one after the other, both live at once; scheduled,
// each is summed before the next is made.
constexpr const char* kTwoChains = R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (p: f32[1024,1024]) -> (f32[1024], f32[1024]) {
  %p = f32[1024,1024] parameter(0)
  %zero = f32[] constant(0)
  %x = f32[1024,1024] exponential(%p)
  %y = f32[1024,1024] negate(%p)
  %ry = f32[1024] reduce(%y, %zero), dimensions={1}, to_apply=%add
  %rx = f32[1024] reduce(%x, %zero), dimensions={1}, to_apply=%add
  ROOT %t = (f32[1024], f32[1024]) tuple(%rx, %ry)
})";

TEST(PassMemoryScheduler, EachValueIsConsumedBeforeTheNextIsMade) {
  bool changed = false;
  MemorySchedulerPass pass;
  const std::vector<std::string> order = Schedule(kTwoChains, &changed, &pass);
  EXPECT_TRUE(changed);
  EXPECT_EQ(order, (std::vector<std::string>{"p", "zero", "x", "rx", "y", "ry", "t"}));
  // The parameter and one 4 MiB value at a time instead of two, less x's 4 KiB sum, now live
  // while y is made.
  EXPECT_EQ(pass.peak_before() - pass.peak_after(), (4 << 20) - 4096);
}

TEST(PassMemoryScheduler, AnOrderThatSavesNothingStays) {
  bool changed = true;
  const std::vector<std::string> order = Schedule(R"(HloModule m
ENTRY %e (p: f32[1024]) -> f32[1024] {
  %p = f32[1024] parameter(0)
  %a = f32[1024] negate(%p)
  %b = f32[1024] exponential(%a)
  ROOT %c = f32[1024] add(%a, %b)
})",
                                                  &changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(order, (std::vector<std::string>{"p", "a", "b", "c"}));
}

// The list order alone would run x's all-reduce first (x is summed first); collectives keep
// the order they were written in, which every core runs alike.
TEST(PassMemoryScheduler, CollectivesKeepTheirOrder) {
  bool changed = false;
  const std::vector<std::string> order = Schedule(R"(HloModule m, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (p: f32[1024,1024]) -> (f32[1024], f32[1024]) {
  %p = f32[1024,1024] parameter(0)
  %zero = f32[] constant(0)
  %x = f32[1024,1024] exponential(%p)
  %y = f32[1024,1024] negate(%p)
  %ry = f32[1024] reduce(%y, %zero), dimensions={1}, to_apply=%add
  %ary = f32[1024] all-reduce(%ry), replica_groups={}, to_apply=%add
  %rx = f32[1024] reduce(%x, %zero), dimensions={1}, to_apply=%add
  %arx = f32[1024] all-reduce(%rx), replica_groups={}, to_apply=%add
  ROOT %t = (f32[1024], f32[1024]) tuple(%arx, %ary)
})",
                                                  &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(order,
            (std::vector<std::string>{"p", "zero", "x", "rx", "y", "ry", "ary", "arx", "t"}));
}

TEST(PassMemoryScheduler, XlasScheduleIsKept) {
  std::string scheduled = kTwoChains;
  scheduled.replace(0, std::string("HloModule m").size(), "HloModule m, is_scheduled=true");
  bool changed = true;
  const std::vector<std::string> order = Schedule(scheduled, &changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(order, (std::vector<std::string>{"p", "zero", "x", "y", "ry", "rx", "t"}));
}

}  // namespace
}  // namespace tpusim::passes
