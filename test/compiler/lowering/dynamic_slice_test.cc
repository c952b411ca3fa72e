// dynamic-slice and dynamic-update-slice on the kernel of dynamic_slice_kernel.h: simulated
// values against the evaluator. Seeded s32 inputs lie in [0, 8), so a start past
// dims - sizes is clamped; constant starts (-3, 100) check the clamp at both ends.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

TEST(DynamicSlice, RunTimeStartsClampedAsXla) {
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[12,9,300], i: s32[], j: s32[], n: s32[40,50]) -> (f32[6,5,300], f32[6,9,20], s32[3,50]) {
  %x = f32[12,9,300]{2,1,0} parameter(0)
  %i = s32[] parameter(1)
  %j = s32[] parameter(2)
  %n = s32[40,50]{1,0} parameter(3)
  %zero = s32[] constant(0)
  %low = s32[] constant(-3)
  %high = s32[] constant(100)
  %a = f32[6,5,300]{2,1,0} dynamic-slice(%x, %i, %j, %zero), dynamic_slice_sizes={6,5,300}
  %b = f32[6,9,20]{2,1,0} dynamic-slice(%x, %low, %j, %high), dynamic_slice_sizes={6,9,20}
  %c = s32[3,50]{1,0} dynamic-slice(%n, %j, %low), dynamic_slice_sizes={3,50}
  ROOT %t = (f32[6,5,300], f32[6,9,20], s32[3,50]) tuple(%a, %b, %c)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);  // elements are copied
}

TEST(DynamicSlice, UpdateSliceCopiesTheOperandThenWritesTheBlock) {
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[10,300], u: f32[4,130], i: s32[], j: s32[]) -> (f32[10,300], f32[10,300]) {
  %x = f32[10,300]{1,0} parameter(0)
  %u = f32[4,130]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  %high = s32[] constant(1000)
  %a = f32[10,300]{1,0} dynamic-update-slice(%x, %u, %i, %j)
  %b = f32[10,300]{1,0} dynamic-update-slice(%x, %u, %high, %i)
  ROOT %t = (f32[10,300], f32[10,300]) tuple(%a, %b)
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);
}

}  // namespace
}  // namespace tpusim
