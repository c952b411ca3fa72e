// The forms BERT-base's loop fusions need from the tiled VPU kernel (tile_kernel.h): a
// matrix broadcast along leading dimensions (the position embeddings added to every
// sequence), s32 multiplies by a constant (masked positions), iotas longer than the index
// table (the one-hot labels of the vocabulary), reductions over leading dimensions, and
// 1-D Adam updates of the 30522-entry output bias. Simulated with random inputs and
// compared with the reference evaluator.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;

// Rows repeating with period 128 (within a 1024-row tile) and 2048 (over two tiles).
TEST(ExactBertFusions, MatrixBroadcastAlongLeadingDimensions) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[6,128,200], p: f32[128,200], y: f32[3,2048,130], q: f32[2048,130]) -> (f32[6,128,200], f32[3,2048,130]) {
  %x = f32[6,128,200]{2,1,0} parameter(0)
  %p = f32[128,200]{1,0} parameter(1)
  %y = f32[3,2048,130]{2,1,0} parameter(2)
  %q = f32[2048,130]{1,0} parameter(3)
  %pb = f32[6,128,200]{2,1,0} broadcast(%p), dimensions={1,2}
  %a = f32[6,128,200]{2,1,0} add(%x, %pb)
  %qb = f32[3,2048,130]{2,1,0} broadcast(%q), dimensions={1,2}
  %b = f32[3,2048,130]{2,1,0} multiply(%y, %qb)
  ROOT %t = (f32[6,128,200], f32[3,2048,130]) tuple(%a, %b)
})");
}

// iota * 20 + p (BERT's masked positions) and iota * -7 on s32; a column iota of 3000
// compared with labels into a one-hot select; an f32 row iota over two row tiles.
TEST(ExactBertFusions, S32MultiplyByConstantAndLongIotas) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (p: s32[32,20], labels: s32[40], x: f32[40,3000], z: f32[1200,20]) -> (s32[32,20], s32[32,20], f32[40,3000], f32[1200,20]) {
  %p = s32[32,20]{1,0} parameter(0)
  %labels = s32[40]{0} parameter(1)
  %x = f32[40,3000]{1,0} parameter(2)
  %z = f32[1200,20]{1,0} parameter(3)
  %rows = s32[32,20]{1,0} iota(), iota_dimension=0
  %k = s32[] constant(20)
  %kb = s32[32,20]{1,0} broadcast(%k), dimensions={}
  %m = s32[32,20]{1,0} multiply(%rows, %kb)
  %pos = s32[32,20]{1,0} add(%m, %p)
  %n = s32[] constant(-7)
  %nb = s32[32,20]{1,0} broadcast(%n), dimensions={}
  %neg = s32[32,20]{1,0} multiply(%nb, %p)
  %cols = s32[40,3000]{1,0} iota(), iota_dimension=1
  %lb = s32[40,3000]{1,0} broadcast(%labels), dimensions={0}
  %hit = pred[40,3000]{1,0} compare(%lb, %cols), direction=EQ
  %zero = f32[] constant(0)
  %zb = f32[40,3000]{1,0} broadcast(%zero), dimensions={}
  %onehot = f32[40,3000]{1,0} select(%hit, %x, %zb)
  %fr = f32[1200,20]{1,0} iota(), iota_dimension=0
  %zr = f32[1200,20]{1,0} add(%z, %fr)
  ROOT %t = (s32[32,20], s32[32,20], f32[40,3000], f32[1200,20]) tuple(%pos, %neg, %onehot, %zr)
})",
              /*tolerance=*/1e-7);
}

TEST(ExactBertFusions, ReductionsOverLeadingAndTrailingDimensions) {
  ExpectMatch(R"(HloModule m, replica_count=8
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}
ENTRY %main (a: f32[10,40,300]) -> (f32[40,300], f32[10]) {
  %a = f32[10,40,300]{2,1,0} parameter(0)
  %zero = f32[] constant(0)
  %lead = f32[40,300]{1,0} reduce(%a, %zero), dimensions={0}, to_apply=%sum
  %trail = f32[10]{0} reduce(%a, %zero), dimensions={1,2}, to_apply=%sum
  ROOT %t = (f32[40,300], f32[10]) tuple(%lead, %trail)
})");
}

// Adam's second moment of the output bias: 238 rows of 128 and a tail of 58 elements.
TEST(ExactBertFusions, FlatOneDimensionalUpdateWithScalars) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (g: f32[30522], v: f32[30522], b2: f32[]) -> f32[30522] {
  %g = f32[30522]{0} parameter(0)
  %v = f32[30522]{0} parameter(1)
  %b2 = f32[] parameter(2)
  %gg = f32[30522]{0} multiply(%g, %g)
  %k = f32[] constant(0.001)
  %kb = f32[30522]{0} broadcast(%k), dimensions={}
  %s = f32[30522]{0} multiply(%gg, %kb)
  %bb = f32[30522]{0} broadcast(%b2), dimensions={}
  %d = f32[30522]{0} multiply(%v, %bb)
  ROOT %r = f32[30522]{0} add(%d, %s)
})");
}

}  // namespace
}  // namespace tpusim
