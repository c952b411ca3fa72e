// Sort on the VPU's bitonic network (sort_kernel.h) with values: f32 and s32 keys, LT and
// GT, key-value tuples, ties (the evaluator's sort is stable), padded lengths and more lines
// than one group, compared with the evaluator on v3-8.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::SimulateValues;

// A 1-D f32 sort of 1000 elements (padded to 1024), ascending.
constexpr const char* kSortOneLine = R"(HloModule m, replica_count=8
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
ENTRY %main (x: f32[1000]) -> f32[1000] {
  %x = f32[1000]{0} parameter(0)
  ROOT %s = f32[1000]{0} sort(%x), dimensions={0}, to_apply=%lt
})";

TEST(ExactSort, OneLineAscending) { ExpectMatch(kSortOneLine, 1e-12); }

TEST(ExactSort, CorruptedResultIsDetected) {
  testing::ValueRun r = SimulateValues(kSortOneLine, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// s32 keys in [0, 8) and the same shifted next to INT_MAX and INT_MIN (values that round
// alike in f32 and whose differences overflow), each key many times: sorted with their
// positions (an iota) as values, ascending and descending, so every tie shows whether the
// sort kept the original order.
TEST(ExactSort, S32KeysWithTiesAtTheExtremesAreStable) {
  ExpectMatch(R"(HloModule m, replica_count=8
%lt (a: s32[], b: s32[], c: s32[], d: s32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  ROOT %r = pred[] compare(%a, %b), direction=LT
}
%gt (a: s32[], b: s32[], c: s32[], d: s32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  ROOT %r = pred[] compare(%b, %a), direction=LT
}
ENTRY %main (x: s32[6,40]) -> (s32[6,120], s32[6,120], s32[6,120], s32[6,120]) {
  %x = s32[6,40]{1,0} parameter(0)
  %high = s32[] constant(2147483640)
  %highs = s32[6,40]{1,0} broadcast(%high), dimensions={}
  %low = s32[] constant(-2147483647)
  %lows = s32[6,40]{1,0} broadcast(%low), dimensions={}
  %x_high = s32[6,40]{1,0} add(%x, %highs)
  %x_low = s32[6,40]{1,0} add(%x, %lows)
  %keys = s32[6,120]{1,0} concatenate(%x_high, %x, %x_low), dimensions={1}
  %pos = s32[6,120]{1,0} iota(), iota_dimension=1
  %up = (s32[6,120]{1,0}, s32[6,120]{1,0}) sort(%keys, %pos), dimensions={1}, to_apply=%lt
  %down = (s32[6,120]{1,0}, s32[6,120]{1,0}) sort(%keys, %pos), dimensions={1}, to_apply=%gt
  %up_keys = s32[6,120]{1,0} get-tuple-element(%up), index=0
  %up_pos = s32[6,120]{1,0} get-tuple-element(%up), index=1
  %down_keys = s32[6,120]{1,0} get-tuple-element(%down), index=0
  %down_pos = s32[6,120]{1,0} get-tuple-element(%down), index=1
  ROOT %t = (s32[6,120]{1,0}, s32[6,120]{1,0}, s32[6,120]{1,0}, s32[6,120]{1,0}) tuple(%up_keys, %up_pos, %down_keys, %down_pos)
})",
              1e-12);
}

// 2,100 lines (two groups of 1024 and a tail of 52) of 24 elements: f32 values keyed by
// the second operand, f32 keys with ties (each key twice in its line), descending.
TEST(ExactSort, KeyValueLinesOverSeveralGroupsDescending) {
  ExpectMatch(R"(HloModule m, replica_count=8
%gt (a: f32[], b: f32[], c: f32[], d: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  ROOT %r = pred[] compare(%c, %d), direction=GT
}
ENTRY %main (v: f32[2100,24], k: f32[2100,12]) -> (f32[2100,24], f32[2100,24]) {
  %v = f32[2100,24]{1,0} parameter(0)
  %k = f32[2100,12]{1,0} parameter(1)
  %keys = f32[2100,24]{1,0} concatenate(%k, %k), dimensions={1}
  %s = (f32[2100,24]{1,0}, f32[2100,24]{1,0}) sort(%v, %keys), dimensions={1}, to_apply=%gt
  %values = f32[2100,24]{1,0} get-tuple-element(%s), index=0
  %sorted = f32[2100,24]{1,0} get-tuple-element(%s), index=1
  ROOT %t = (f32[2100,24]{1,0}, f32[2100,24]{1,0}) tuple(%values, %sorted)
})",
              1e-12);
}

// The two layouts with s32 ties: 2,000 lines of 16 (one line per slot) sorted with their
// positions, and two lines of 3,000 (lanes: in-vreg steps, whole-vreg steps with a
// lane-reversed partner, a ragged last run of 56 elements) with distinct f32 values, whose
// order among equal keys shows stability; descending.
TEST(ExactSort, S32TiesInBothLayoutsAreStable) {
  ExpectMatch(R"(HloModule m, replica_count=8
%gt (a: s32[], b: s32[], c: s32[], d: s32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  ROOT %r = pred[] compare(%a, %b), direction=GT
}
%gtf (a: s32[], b: s32[], c: f32[], d: f32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  ROOT %r = pred[] compare(%a, %b), direction=GT
}
ENTRY %main (x: s32[2000,16], y: s32[2,3000], v: f32[2,3000]) -> (s32[2000,16], s32[2000,16], s32[2,3000], f32[2,3000]) {
  %x = s32[2000,16]{1,0} parameter(0)
  %y = s32[2,3000]{1,0} parameter(1)
  %v = f32[2,3000]{1,0} parameter(2)
  %px = s32[2000,16]{1,0} iota(), iota_dimension=1
  %sx = (s32[2000,16]{1,0}, s32[2000,16]{1,0}) sort(%x, %px), dimensions={1}, to_apply=%gt
  %sy = (s32[2,3000]{1,0}, f32[2,3000]{1,0}) sort(%y, %v), dimensions={1}, to_apply=%gtf
  %kx = s32[2000,16]{1,0} get-tuple-element(%sx), index=0
  %ix = s32[2000,16]{1,0} get-tuple-element(%sx), index=1
  %ky = s32[2,3000]{1,0} get-tuple-element(%sy), index=0
  %vy = f32[2,3000]{1,0} get-tuple-element(%sy), index=1
  ROOT %t = (s32[2000,16]{1,0}, s32[2000,16]{1,0}, s32[2,3000]{1,0}, f32[2,3000]{1,0}) tuple(%kx, %ix, %ky, %vy)
})",
              1e-12);
}

// A line of 20,000 f32 keys (padded to 32,768: 256 vregs per array in the lanes layout,
// beyond what one element per vreg could hold).
TEST(ExactSort, LongLineInTheLanesLayout) {
  ExpectMatch(R"(HloModule m, replica_count=8
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
ENTRY %main (x: f32[20000]) -> f32[20000] {
  %x = f32[20000]{0} parameter(0)
  ROOT %s = f32[20000]{0} sort(%x), dimensions={0}, to_apply=%lt
})",
              1e-12);
}

}  // namespace
}  // namespace tpusim
