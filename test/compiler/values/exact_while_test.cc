// While loops and calls with values (compiler/lowering/control/while_loop.cc, control_flow.cc): the
// loop state lives in the while's buffers, body and callee values in buffers of their own;
// simulated on v3-8 and compared with the evaluator.
#include <gtest/gtest.h>

#include "test/compiler/lowering/control_flow_modules.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::SimulateValues;

TEST(ExactWhile, DotAndElementwiseUpdateOfACarriedTensor) { ExpectMatch(testing::kDotLoop); }

TEST(ExactWhile, CorruptedResultIsDetected) {
  const testing::ValueRun r = SimulateValues(testing::kDotLoop, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1e-3);
}

TEST(ExactWhile, NestedLoops) { ExpectMatch(testing::kNestedLoops); }

TEST(ExactWhile, BodyReadsAnElementAfterComputingAnotherOnesNewValue) {
  ExpectMatch(testing::kSwapLoop);
}

TEST(ExactWhile, ScanUpdatesTheCarriedBufferInPlace) { ExpectMatch(testing::kScanLoop); }

TEST(ExactWhile, CallsOfAComputationWithTwoParameters) { ExpectMatch(testing::kCalls); }

TEST(ExactWhile, LoopInsideACall) { ExpectMatch(testing::kLoopInCall); }

// A single-replica module: the batch (64 rows) is split over the cores, so the loop state
// holds each core's 8 rows and the body computes on them.
TEST(ExactWhile, DataParallelLoopCarriesEachCoresShareOfTheBatch) {
  ExpectMatch(R"(HloModule dp_loop
%cond (s: (s32[], f32[64,128])) -> pred[] {
  %s = (s32[], f32[64,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[64,128])) -> (s32[], f32[64,128]) {
  %s = (s32[], f32[64,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[64,128]{1,0} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %sq = f32[64,128]{1,0} multiply(%x, %x)
  %y = f32[64,128]{1,0} subtract(%sq, %x)
  ROOT %out = (s32[], f32[64,128]{1,0}) tuple(%next, %y)
}
ENTRY %main (x: f32[64,128]) -> f32[64,128] {
  %x = f32[64,128]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64,128]{1,0}) tuple(%zero, %x)
  %loop = (s32[], f32[64,128]{1,0}) while(%init), condition=%cond, body=%body
  ROOT %r = f32[64,128]{1,0} get-tuple-element(%loop), index=1
})");
}

}  // namespace
}  // namespace tpusim
