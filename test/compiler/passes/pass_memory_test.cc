// Memory planning: buffer sizes, live ranges, reuse, and the out-of-memory error.
#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/passes/layout.h"
#include "compiler/passes/memory.h"

namespace tpusim::passes {
namespace {

hlo::HloModule Parse(const std::string& text) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(m).value();
}

constexpr int64_t kMiB = 1 << 20;

// A chain of 1 MiB elementwise ops after one 1 MiB parameter.
const char* kChain = R"(HloModule t
ENTRY %e {
  %p = f32[512,512] parameter(0)
  %a = f32[512,512] exponential(f32[512,512] %p)
  %b = f32[512,512] negate(f32[512,512] %a)
  %c = f32[512,512] log(f32[512,512] %b)
  ROOT %d = f32[512,512] abs(f32[512,512] %c)
})";

TEST(PassMemory, HumanBytes) {
  EXPECT_EQ(HumanBytes(512), "512B");
  EXPECT_EQ(HumanBytes(1536), "1.50K");
  EXPECT_EQ(HumanBytes(kDefaultHbmBytes), "16.00G");
  EXPECT_EQ(HumanBytes(static_cast<int64_t>(17.2 * (1 << 30))), "17.20G");
}

TEST(PassMemory, LiveRangesAndReuse) {
  hlo::HloModule m = Parse(kChain);
  MemoryPlanningPass pass;
  hlo::Result<bool> changed = pass.Run(m);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_FALSE(*changed);
  const MemoryPlan& plan = pass.plan();
  ASSERT_EQ(plan.buffers.size(), 5u);
  const BufferInfo* p = plan.Find("p");
  EXPECT_EQ(p->kind, "parameter");
  EXPECT_EQ(p->start, 0);
  EXPECT_EQ(p->end, 4);
  const BufferInfo* a = plan.Find("a");
  EXPECT_EQ(a->start, 1);
  EXPECT_EQ(a->end, 2);  // dies after its last use by %b
  EXPECT_EQ(plan.Find("d")->kind, "output");
  EXPECT_EQ(plan.Find("d")->end, 4);
  // p plus an operand and a result at a time: 3 MiB, with %c reusing %a's space.
  EXPECT_EQ(plan.peak_live_bytes, 3 * kMiB);
  EXPECT_EQ(plan.peak_bytes, 3 * kMiB);
  EXPECT_EQ(plan.Find("c")->offset, a->offset);
  // Buffers live at the same time never overlap in memory.
  for (const BufferInfo& x : plan.buffers) {
    for (const BufferInfo& y : plan.buffers) {
      if (&x == &y || x.end < y.start || y.end < x.start) continue;
      EXPECT_TRUE(x.offset + x.size <= y.offset || y.offset + y.size <= x.offset)
          << x.name << " and " << y.name;
    }
  }
}

TEST(PassMemory, PaddedSizesAndAliases) {
  hlo::HloModule m = Parse(R"(HloModule t
ENTRY %e {
  %p = f32[3,100] parameter(0)
  %n = f32[3,100] negate(f32[3,100] %p)
  %t = (f32[3,100], f32[3,100]) tuple(f32[3,100] %p, f32[3,100] %n)
  ROOT %g = f32[3,100] get-tuple-element((f32[3,100], f32[3,100]) %t), index=1
})");
  ASSERT_TRUE(LayoutAssignmentPass().Run(m).ok());
  MemoryPlan plan = PlanMemory(m);
  ASSERT_EQ(plan.buffers.size(), 2u);  // tuple and get-tuple-element alias their operands
  EXPECT_EQ(plan.Find("n")->size, 4 * 128 * 4);
  EXPECT_EQ(plan.Find("n")->logical_size, 3 * 100 * 4);
  EXPECT_EQ(plan.Find("n")->kind, "output");
  EXPECT_EQ(plan.peak_bytes, 2 * 4 * 128 * 4);
}

// Each element of a tuple-shaped result is its own buffer: the batch mean read at the end
// does not keep the normalized activations alive.
TEST(PassMemory, TupleResultElementsLiveApart) {
  hlo::HloModule m = Parse(R"(HloModule t
ENTRY %e {
  %x = f32[256,4096] parameter(0)
  %s = f32[4096] parameter(1)
  %o = f32[4096] parameter(2)
  %bn = (f32[256,4096], f32[4096], f32[4096]) batch-norm-training(f32[256,4096] %x, f32[4096] %s, f32[4096] %o), epsilon=0.001, feature_index=1
  %y = f32[256,4096] get-tuple-element((f32[256,4096], f32[4096], f32[4096]) %bn), index=0
  %r = f32[256,4096] exponential(f32[256,4096] %y)
  %n = f32[256,4096] negate(f32[256,4096] %r)
  %mean = f32[4096] get-tuple-element((f32[256,4096], f32[4096], f32[4096]) %bn), index=1
  ROOT %t = (f32[256,4096], f32[4096]) tuple(f32[256,4096] %n, f32[4096] %mean)
})");
  MemoryPlan plan = PlanMemory(m);
  const BufferInfo* y = plan.Find("bn");
  const BufferInfo* mean = plan.Find(ElementBufferName("bn", 1));
  const BufferInfo* var = plan.Find("bn{2}");
  ASSERT_TRUE(y && mean && var);
  EXPECT_EQ(y->size, 4 * kMiB);
  EXPECT_EQ(mean->size, 16 * 1024);
  EXPECT_EQ(y->end, 5);  // last read by %r
  EXPECT_EQ(mean->end, 8);
  EXPECT_EQ(mean->kind, "output");
  EXPECT_EQ(y->kind, "temp");
  EXPECT_EQ(var->end, 3);                        // never read
  EXPECT_EQ(plan.Find("n")->offset, y->offset);  // reuses the activations' space
}

// Buffer donation: the new weights are written over the old ones when the update is the
// last reader and works element by element; a later reader or a matmul producer keeps them
// apart.
TEST(PassMemory, DonatedOutputsTakeTheirParametersBuffers) {
  hlo::HloModule m = Parse(
      R"(HloModule t, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias), {2}: (2, {}, may-alias) }
ENTRY %e {
  %w = f32[512,512] parameter(0)
  %v = f32[512,512] parameter(1)
  %u = f32[512,512] parameter(2)
  %g = f32[512,512] exponential(f32[512,512] %w)
  %w2 = f32[512,512] subtract(f32[512,512] %w, f32[512,512] %g)
  %v2 = f32[512,512] add(f32[512,512] %v, f32[512,512] %g)
  %late = f32[512,512] negate(f32[512,512] %v)
  %u2 = f32[512,512] dot(f32[512,512] %u, f32[512,512] %g), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[512,512], f32[512,512], f32[512,512], f32[512,512]) tuple(%w2, %v2, %u2, %late)
})");
  MemoryPlanningPass pass;
  ASSERT_TRUE(pass.Run(m).ok());
  const MemoryPlan& plan = pass.plan();
  EXPECT_EQ(plan.Find("w2")->in_place_of, "w");
  EXPECT_EQ(plan.Find("w2")->offset, plan.Find("w")->offset);
  EXPECT_EQ(plan.Find("v2")->in_place_of, "");  // %late reads %v after the update
  EXPECT_EQ(plan.Find("u2")->in_place_of, "");  // a matmul cannot write what it reads
  // w, v, u, g, v2, late, u2 (w2 lives in w): 7 MiB at the end.
  EXPECT_EQ(plan.peak_live_bytes, 7 * kMiB);
}

TEST(PassMemory, MalformedInputOutputAliasIsAnError) {
  hlo::HloModule m = Parse(R"(HloModule t, input_output_alias={ {0}: (zero, {}, may-alias) }
ENTRY %e {
  ROOT %p = f32[8] parameter(0)
})");
  hlo::Result<bool> r = MemoryPlanningPass().Run(m);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input_output_alias: expected"), std::string::npos)
      << r.status().message();
}

TEST(PassMemory, OutOfMemoryWithSmallCapacity) {
  hlo::HloModule m = Parse(kChain);
  hlo::Result<bool> r = MemoryPlanningPass(2 * kMiB).Run(m);
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.status().message();
  EXPECT_EQ(msg.substr(0, msg.find('\n')),
            "RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 3.00M of 2.00M hbm. "
            "Exceeded hbm capacity by 1.00M.");
  EXPECT_NE(msg.find("Largest program allocations in hbm:"), std::string::npos);
  EXPECT_NE(msg.find("  1. Size: 1.00M\n     Shape: f32[512,512]\n     Unpadded size: 1.00M\n"
                     "     XLA label: %p\n     Allocation type: parameter"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("  5. Size: 1.00M"), std::string::npos);
}

TEST(PassMemory, OutOfMemoryAtTheDefaultCapacity) {
  // Two 8 GiB buffers are live with a third being written: 24 GiB on a 16 GiB core.
  hlo::HloModule m = Parse(R"(HloModule t
ENTRY %e {
  %p = f32[32768,65536] parameter(0)
  %a = f32[32768,65536] exponential(f32[32768,65536] %p)
  ROOT %b = f32[32768,65536] negate(f32[32768,65536] %a)
})");
  hlo::Result<bool> r = MemoryPlanningPass().Run(m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().substr(0, r.status().message().find('\n')),
            "RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 24.00G of 16.00G "
            "hbm. Exceeded hbm capacity by 8.00G.");
}

}  // namespace
}  // namespace tpusim::passes
