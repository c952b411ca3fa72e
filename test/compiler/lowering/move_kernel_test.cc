// Data movement on strided DMA (compiler/lowering/data/move_kernel.h): how a move collapses into
// descriptor-shaped copies, and every op's simulated values against the evaluator.
#include "compiler/lowering/data/move_kernel.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using lowering::MovePlan;
using lowering::PlanMove;
using lowering::StridedMove;

TEST(MovePlan, ContiguousDimensionsMergeIntoOneRow) {
  MovePlan p = PlanMove(StridedMove{{6, 10, 12}, {480, 48, 4}, {480, 48, 4}, 0, 0, 4});
  EXPECT_EQ(p.row_bytes, 6 * 10 * 12 * 4);
  EXPECT_EQ(p.rows, 1);
  EXPECT_EQ(p.planes, 1);
  EXPECT_EQ(p.copies(), 1);
}

TEST(MovePlan, TransposeMovesElementRowsInPlanes) {
  // [6,10,12] -> [12,6,10] (dimensions={2,0,1}): no dimension stays contiguous.
  MovePlan p = PlanMove(StridedMove{{12, 6, 10}, {4, 480, 48}, {240, 40, 4}, 0, 0, 4});
  EXPECT_EQ(p.row_bytes, 4);
  EXPECT_EQ(p.rows, 6 * 10);  // the two inner output dims merge: 480 == 48 * 10
  EXPECT_EQ(p.src_row, 48);
  EXPECT_EQ(p.dst_row, 4);
  EXPECT_EQ(p.planes, 12);
  EXPECT_EQ(p.src_plane, 4);
  EXPECT_EQ(p.dst_plane, 240);
  EXPECT_TRUE(p.outer.empty());
}

TEST(MovePlan, OuterDimensionsBecomeLoops) {
  StridedMove m{{3, 5, 7, 9, 11}, {4000, 800, 100, 10, 4}, {0, 0, 0, 0, 0}, 0, 0, 4};
  m.dst_strides = {5 * 7 * 9 * 11 * 4, 7 * 9 * 11 * 4, 9 * 11 * 4, 11 * 4, 4};
  m.src_strides = {9000, 1600, 200, 1200 * 4, 4};  // nothing merges but the innermost row
  MovePlan p = PlanMove(m);
  EXPECT_EQ(p.row_bytes, 44);
  EXPECT_EQ(p.rows, 9);
  EXPECT_EQ(p.planes, 7);
  EXPECT_EQ(p.outer, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(p.copies(), 15);
  m.dims.insert(m.dims.begin(), 2), m.src_strides.insert(m.src_strides.begin(), 99996);
  m.dst_strides.insert(m.dst_strides.begin(), 3 * 5 * 7 * 9 * 11 * 4);
  EXPECT_THROW(PlanMove(m), std::invalid_argument);  // three outer loops
}

TEST(MovePlan, TheTwoLargestDimensionsGoToTheDescriptor) {
  // Space-to-depth's transpose of bf16 [40, 2, 5, 6] -> [40, 5, 2, 6] (pixel pairs of 12 bytes):
  // the 40 outer rows go to the descriptor's planes, the 2 phases become the loop.
  MovePlan p = PlanMove(StridedMove{{40, 5, 2, 6}, {120, 12, 60, 2}, {120, 24, 12, 2}, 0, 0, 2});
  EXPECT_EQ(p.row_bytes, 12);
  EXPECT_EQ(p.rows, 5);
  EXPECT_EQ(p.src_row, 12);
  EXPECT_EQ(p.dst_row, 24);
  EXPECT_EQ(p.planes, 40);
  EXPECT_EQ(p.src_plane, 120);
  EXPECT_EQ(p.outer, (std::vector<int64_t>{2}));
  EXPECT_EQ(p.outer_src, (std::vector<int64_t>{60}));
  EXPECT_EQ(p.outer_dst, (std::vector<int64_t>{12}));
  EXPECT_EQ(p.copies(), 2);
}

TEST(MovePlan, TwoByteElementsOneByOneAreRejected) {
  EXPECT_THROW(PlanMove(StridedMove{{4, 6}, {2, 8}, {12, 2}, 0, 0, 2}), std::invalid_argument);
  EXPECT_NO_THROW(PlanMove(StridedMove{{4, 6}, {12, 2}, {12, 2}, 0, 0, 2}));
}

// One simulation per process (SystemC), so each test is one module.
void ExpectExact(const std::string& hlo) {
  testing::ValueRun r = testing::SimulateValues(hlo);
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);  // data movement is exact
}

TEST(MoveKernel, EveryDataMovementOpEqualsTheEvaluator) {
  ExpectExact(R"(HloModule m, replica_count=8
ENTRY %main (p0: f32[6,10,12], p1: f32[6,10,3]) -> (f32[12,6,10], f32[3,5,4], f32[6,10,15], f32[8,11,12], f32[6,10,12], f32[4,6,10,3], f32[6,10,3]) {
  %p0 = f32[6,10,12]{2,1,0} parameter(0)
  %p1 = f32[6,10,3]{2,1,0} parameter(1)
  %t = f32[12,6,10]{2,1,0} transpose(%p0), dimensions={2,0,1}
  %s = f32[3,5,4]{2,1,0} slice(%p0), slice={[1:6:2], [0:10:2], [2:12:3]}
  %c = f32[6,10,15]{2,1,0} concatenate(%p0, %p1), dimensions={2}
  %z = f32[] constant(0.5)
  %pd = f32[8,11,12]{2,1,0} pad(%p1, %z), padding=1_1x0_1x2_3_2
  %r = f32[6,10,12]{2,1,0} reverse(%p0), dimensions={0,2}
  %b = f32[4,6,10,3]{3,2,1,0} broadcast(%p1), dimensions={1,2,3}
  %cp = f32[6,10,3]{2,1,0} copy(%p1)
  ROOT %out = (f32[12,6,10]{2,1,0}, f32[3,5,4]{2,1,0}, f32[6,10,15]{2,1,0}, f32[8,11,12]{2,1,0}, f32[6,10,12]{2,1,0}, f32[4,6,10,3]{3,2,1,0}, f32[6,10,3]{2,1,0}) tuple(%t, %s, %c, %pd, %r, %b, %cp)
})");
}

TEST(MoveKernel, PadLargerThanItsSeedDoublesTheFill) {  // 9,600 elements: seed + 4 doublings
  ExpectExact(R"(HloModule m, replica_count=8
ENTRY %main (p1: f32[6,10,3], v: f32[]) -> f32[40,20,12] {
  %p1 = f32[6,10,3]{2,1,0} parameter(0)
  %v = f32[] parameter(1)
  ROOT %pd = f32[40,20,12]{2,1,0} pad(%p1, %v), padding=20_14x5_5x4_5
})");
}

// A constant has no HBM buffer: broadcasting a scalar one is a fill from an immediate (as a
// SAME average pool's window counts start), 25,920 elements.
TEST(MoveKernel, BroadcastOfAScalarConstantIsAFill) {
  ExpectExact(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[3,9,10,96]) -> f32[3,9,10,96] {
  %x = f32[3,9,10,96]{3,2,1,0} parameter(0)
  %one = f32[] constant(1.5)
  ROOT %ones = f32[3,9,10,96]{3,2,1,0} broadcast(%one), dimensions={}
})");
}

// A constant fill of 800,000 bytes: its 64 KiB VMEM block written 12 times at a stride,
// then the 13,568-byte tail.
TEST(MoveKernel, ConstantFillRepeatsItsVmemBlock) {
  ExpectExact(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[2,100,1000]) -> f32[2,100,1000] {
  %x = f32[2,100,1000]{2,1,0} parameter(0)
  %k = f32[] constant(-2.25)
  ROOT %fill = f32[2,100,1000]{2,1,0} broadcast(%k), dimensions={}
})");
}

// Other moves of a constant have nothing to copy from, so they stay timing-only.
TEST(MoveKernel, ConcatenatingAConstantIsTimingOnly) {
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
ENTRY %main (p0: f32[2,3]) -> f32[4,3] {
  %p0 = f32[2,3]{1,0} parameter(0)
  %k = f32[2,3]{1,0} constant({ { 1, 2, 3 }, { 4, 5, 6 } })
  ROOT %c = f32[4,3]{1,0} concatenate(%p0, %k), dimensions={0}
})");
  EXPECT_FALSE(r.exact);
  EXPECT_NE(r.inexact_ops.find("%c (concatenate)"), std::string::npos) << r.inexact_ops;
}

TEST(MoveKernel, CorruptedResultIsDetected) {
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
ENTRY %main (p0: f32[6,10,12]) -> f32[12,6,10] {
  %p0 = f32[6,10,12]{2,1,0} parameter(0)
  ROOT %t = f32[12,6,10]{2,1,0} transpose(%p0), dimensions={2,0,1}
})",
                                                /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 0.5);
}

}  // namespace
}  // namespace tpusim
