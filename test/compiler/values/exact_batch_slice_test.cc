// Data movement of single-replica modules split over the cores (the batch-sharding pass and the
// SPMD partitioner, docs/spmd.md), simulated with values against the evaluator: a slice or
// dynamic-slice along the batch (its rows lie on other devices: gathered first), a copy of a split
// value, and constants of several values returned by the entry. Seeded s32 inputs lie in [0, 8).
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

TEST(BatchSlice, WindowsAcrossCoresClampedAsXla) {
  // x: batch 64, 8 rows per core. Rows 13..32 span cores 1..4; -3 clamps to 0 (core 0's
  // rows only with a 5-row window), 100 to 44; %i is a run-time start in [0, 8).
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m
ENTRY %main (i: s32[], x: f32[64,300]) -> (f32[20,300], f32[5,300], f32[20,300], f32[20,300], f32[64,300]) {
  %i = s32[] parameter(0)
  %x = f32[64,300]{1,0} parameter(1)
  %zero = s32[] constant(0)
  %mid = s32[] constant(13)
  %low = s32[] constant(-3)
  %high = s32[] constant(100)
  %a = f32[20,300]{1,0} dynamic-slice(%x, %mid, %zero), dynamic_slice_sizes={20,300}
  %b = f32[5,300]{1,0} dynamic-slice(%x, %low, %zero), dynamic_slice_sizes={5,300}
  %c = f32[20,300]{1,0} dynamic-slice(%x, %high, %zero), dynamic_slice_sizes={20,300}
  %d = f32[20,300]{1,0} dynamic-slice(%x, %i, %high), dynamic_slice_sizes={20,300}
  %e = f32[64,300]{1,0} copy(%x)
  ROOT %t = (f32[20,300], f32[5,300], f32[20,300], f32[20,300], f32[64,300]) tuple(%a, %b, %c, %d, %e)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);  // elements are copied, bit for bit
}

TEST(BatchSlice, StaticSlicesOfTheBatch) {
  // slice={[13:33]}: rows of cores 1..4; [0:5]: core 0 only; [56:64]: core 7's rows. Before,
  // each was taken for a partial sum and all-reduced by addition (timing-only, wrong).
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m
ENTRY %main (x: f32[64,300]) -> (f32[20,300], f32[5,300], f32[8,300]) {
  %x = f32[64,300]{1,0} parameter(0)
  %a = f32[20,300]{1,0} slice(%x), slice={[13:33], [0:300]}
  %b = f32[5,300]{1,0} slice(%x), slice={[0:5], [0:300]}
  %c = f32[8,300]{1,0} slice(%x), slice={[56:64], [0:300]}
  ROOT %t = (f32[20,300], f32[5,300], f32[8,300]) tuple(%a, %b, %c)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);
}

TEST(BatchSlice, Bf16RowsOfAComputedValue) {
  // bf16 rows of 512 bytes, sliced from a value computed on each core's share.
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m
ENTRY %main (i: s32[], x: bf16[64,256]) -> (bf16[9,256], bf16[64,256]) {
  %i = s32[] parameter(0)
  %x = bf16[64,256]{1,0} parameter(1)
  %y = bf16[64,256]{1,0} negate(%x)
  %zero = s32[] constant(0)
  %a = bf16[9,256]{1,0} dynamic-slice(%y, %i, %zero), dynamic_slice_sizes={9,256}
  %c = bf16[64,256]{1,0} copy(%y)
  ROOT %t = (bf16[9,256], bf16[64,256]) tuple(%a, %c)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);
}

TEST(ConstantResults, ConstantsOfSeveralValuesAreWrittenToTheirOutputs) {
  // Constants have no kernel; returned by the entry they are written bit for bit, inf and
  // NaN included (the comparison takes NaN for NaN).
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[8,128]) -> (f32[4], f32[8,128], bf16[6], s32[3], f32[2]) {
  %x = f32[8,128]{1,0} parameter(0)
  %f = f32[4]{0} constant({1, -2.5, inf, nan})
  %y = f32[8,128]{1,0} negate(%x)
  %b = bf16[6]{0} constant({0.5, -1, 3, 1e30, -0, 7})
  %s = s32[3]{0} constant({-7, 2147483647, 0})
  %one = f32[2]{0} constant({4, 4})
  ROOT %t = (f32[4], f32[8,128], bf16[6], s32[3], f32[2]) tuple(%f, %y, %b, %s, %one)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);
}

}  // namespace
}  // namespace tpusim
