// Collectives that compute exact values when their ring needs padding: simulated with random
// inputs and compared with the reference evaluator (sim_values_util.h).
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

// replica-id tells the cores apart (jax.random.fold_in(key, axis_index) under pmap): each
// core's program fills in its index; the values differ per core and each is compared with
// its replica's. partition-id is 0 (one partition).
TEST(ExactCollectives, ReplicaIdIsEachCoresIndex) {
  testing::ExpectMatch(R"(HloModule m, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[8,128], key: u32[8,128]) -> (f32[8,128], u32[8,128], u32[]) {
  %x = f32[8,128]{1,0} parameter(0)
  %key = u32[8,128]{1,0} parameter(1)
  %id = u32[] replica-id()
  %pid = u32[] partition-id()
  %b = u32[8,128]{1,0} broadcast(%id), dimensions={}
  %k = u32[8,128]{1,0} xor(%key, %b)
  %f = f32[] convert(%id)
  %bf = f32[8,128]{1,0} broadcast(%f), dimensions={}
  %y = f32[8,128]{1,0} multiply(%x, %bf)
  %s = f32[8,128]{1,0} all-reduce(%y), replica_groups={}, to_apply=%add
  ROOT %r = (f32[8,128], u32[8,128], u32[]) tuple(%s, %k, %pid)
})");
}

// The async pairs of an optimized dump (all-reduce, all-gather and collective-permute
// starts and dones, a copy-start into another memory space) run as their synchronous ops.
TEST(ExactCollectives, AsyncPairsOfAnOptimizedDump) {
  testing::ExpectMatch(R"(HloModule m, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[1024], y: f32[256], z: f32[512]) -> (f32[1024], f32[2048], f32[512], f32[512]) {
  %x = f32[1024]{0} parameter(0)
  %y = f32[256]{0} parameter(1)
  %z = f32[512]{0} parameter(2)
  %ars = f32[1024]{0} all-reduce-start(%x), replica_groups={}, to_apply=%add
  %ard = f32[1024]{0} all-reduce-done(%ars)
  %ags = (f32[256]{0}, f32[2048]{0}) all-gather-start(%y), dimensions={0}, replica_groups={}
  %agd = f32[2048]{0} all-gather-done(%ags)
  %cps = (f32[512]{0}, f32[512]{0}, u32[], u32[]) collective-permute-start(%z), source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}
  %cpd = f32[512]{0} collective-permute-done(%cps)
  %cs = (f32[512]{0:S(1)}, f32[512]{0}, u32[]) copy-start(%z)
  %cd = f32[512]{0:S(1)} copy-done(%cs)
  ROOT %t = (f32[1024], f32[2048], f32[512], f32[512]) tuple(%ard, %agd, %cpd, %cd)
})");
}

TEST(ExactCollectives, TupleAllReducePadsItsLastSegmentInVmemOnly) {
  // f32[1100,1000] is 4.4 MB: three 2 MiB ring segments, the last one 0.2 MB of data and
  // the rest padding that never reaches HBM (the neighbouring buffer %c would be overwritten).
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}
ENTRY %main (a: f32[], b: f32[1100,1000], c: f32[10]) -> (f32[], f32[1100,1000], f32[10]) {
  %a = f32[] parameter(0)
  %b = f32[1100,1000]{1,0} parameter(1)
  %c = f32[10]{0} parameter(2)
  %ar = (f32[], f32[1100,1000], f32[10]) all-reduce(%a, %b, %c), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%sum
  %g0 = f32[] get-tuple-element(%ar), index=0
  %g1 = f32[1100,1000]{1,0} get-tuple-element(%ar), index=1
  %g2 = f32[10]{0} get-tuple-element(%ar), index=2
  ROOT %t = (f32[], f32[1100,1000], f32[10], f32[10]) tuple(%g0, %g1, %g2, %c)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_LT(r.error, 1e-6);  // sums of 8 f32 values, in ring order
}

TEST(ExactCollectives, AllGatherOfAnyElementTypeAndDimension) {
  // Parts of 128 bytes (bf16[64]) and rows of 24 bytes gathered along dimension 1: the ring
  // copies bytes, so no padding and no element type matter (every replica holds the same
  // input here: test/board/collectives_test.cc checks the part order with distinct ones).
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
ENTRY %main (a: bf16[64], b: f32[4,6]) -> (bf16[512], f32[4,48]) {
  %a = bf16[64]{0} parameter(0)
  %b = f32[4,6]{1,0} parameter(1)
  %ga = bf16[512]{0} all-gather(%a), replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}
  %gb = f32[4,48]{1,0} all-gather(%b), replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={1}
  ROOT %t = (bf16[512], f32[4,48]) tuple(%ga, %gb)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);
}

// Groups of one replica each: every collective is its operand (difftest found all-gather
// and reduce-scatter refused, "needs at least 2 cores per group", and all-reduce and
// all-to-all timing-only). Each core copies its operand into the result.
TEST(ExactCollectives, GroupsOfOneReplicaAreCopies) {
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (a: f32[16,5], b: bf16[6,4]) -> (f32[16,5], f32[16,5], f32[16,5], bf16[6,4], f32[16,5]) {
  %a = f32[16,5]{1,0} parameter(0)
  %b = bf16[6,4]{1,0} parameter(1)
  %n = f32[16,5]{1,0} negate(%a)
  %ar = f32[16,5]{1,0} all-reduce(%n), replica_groups={{1},{7},{6},{2},{0},{3},{4},{5}}, to_apply=%add
  %ag = f32[16,5]{1,0} all-gather(%a), replica_groups={{0},{1},{2},{3},{4},{5},{6},{7}}, dimensions={0}
  %rs = f32[16,5]{1,0} reduce-scatter(%a), replica_groups={{0},{1},{2},{3},{4},{5},{6},{7}}, dimensions={1}, to_apply=%add
  %aa = bf16[6,4]{1,0} all-to-all(%b), replica_groups={{0},{1},{2},{3},{4},{5},{6},{7}}, dimensions={0}
  %sum = f32[16,5]{1,0} add(%ar, %rs)
  ROOT %t = (f32[16,5], f32[16,5], f32[16,5], bf16[6,4], f32[16,5]) tuple(%ar, %ag, %rs, %aa, %sum)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);
}

// Reduce-scatter along the last dimension: each member's part is a strided set of rows
// (difftest found the ring reducing contiguous quarters instead: wrong values, reported
// exact). Groups as the generator draws them, out of ring order.
TEST(ExactCollectives, ReduceScatterAlongAMinorDimension) {
  testing::ExpectMatch(R"(HloModule m, replica_count=8
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (a: f32[8,2,2,1024]) -> f32[8,2,2,256] {
  %a = f32[8,2,2,1024]{3,2,1,0} parameter(0)
  ROOT %r = f32[8,2,2,256]{3,2,1,0} reduce-scatter(%a), replica_groups={{0,5,6,7},{1,2,3,4}}, dimensions={3}, to_apply=%add
})",
                       1e-6);
}

// difftest seed 102755, minimized: core 2, ahead, enters the permute and signals its writer
// while that writer still waits in the all-gather for another core; with readiness tokens
// on one flag the early token released that wait, and a core wrote the permute's result
// (in the all-gather's reused buffer) into a core still reading it: 0.42 of the largest
// value wrong. Each collective now starts with a two-phase barrier of every core.
TEST(ExactCollectives, AnEarlyCoreCannotReleaseAnEarlierCollectivesWait) {
  testing::ExpectMatch(R"(HloModule m, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (v0: f32[130]) -> (f32[260]) {
  %v0 = f32[130]{0} parameter(0)
  %v1 = f32[260]{0} all-gather(%v0), replica_groups={{0,7},{1,3},{4,5},{2,6}}, dimensions={0}
  %v2 = f32[260]{0} reverse(%v1), dimensions={0}
  %v5 = f32[260]{0} collective-permute(%v2), source_target_pairs={{0,2},{1,6},{2,1},{3,4},{4,7},{6,0}}
  %v10 = f32[260]{0} all-reduce(%v5), replica_groups={{1,3,4,5},{0,2,6,7}}, to_apply=%add
  ROOT %out = (f32[260]{0}) tuple(%v10)
})",
                       1e-6);
}

// Collective buffers above 2 GiB (a 3 GiB parameter first in HBM): their addresses are built
// in registers, as other kernels' are (they were refused: "collective buffers must lie in the
// first 2 GiB of HBM", which stopped ResNet-50 at global batch 1024 split by the partitioner).
TEST(ExactCollectives, BuffersAboveTwoGiB) {
  bool exact = false;
  std::string inexact;
  auto c = testing::CompileForValues(R"(HloModule m, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (big: f32[768,1048576], y: f32[256], z: f32[512], w: f32[8192], v: f32[1024]) -> (f32[2048], f32[512], f32[1024], f32[1024]) {
  %big = f32[768,1048576]{1,0} parameter(0)
  %y = f32[256]{0} parameter(1)
  %z = f32[512]{0} parameter(2)
  %w = f32[8192]{0} parameter(3)
  %v = f32[1024]{0} parameter(4)
  %g = f32[2048]{0} all-gather(%y), replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}
  %p = f32[512]{0} collective-permute(%z), source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}
  %r = f32[1024]{0} reduce-scatter(%w), replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, to_apply=%add
  %a = f32[1024]{0} all-to-all(%v), replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}
  ROOT %t = (f32[2048], f32[512], f32[1024], f32[1024]) tuple(%g, %p, %r, %a)
})",
                                     sim::LoadConfig("v3-8"), exact, inexact);
  ASSERT_TRUE(c);
  // The all-gather and the reduce-scatter run asynchronously: each result is element 1 of
  // its start ("g{1}", "r{1}").
  for (const char* name : {"y", "z", "w", "v", "g{1}", "p", "r{1}", "a"}) {
    const passes::BufferInfo* b = c->report.memory.Find(name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_GT(b->offset, int64_t{1} << 31) << name;
  }
  EXPECT_TRUE(exact) << inexact;
}

}  // namespace
}  // namespace tpusim
