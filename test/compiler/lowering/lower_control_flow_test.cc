// Lowering of while loops and calls (compiler/lowering/control/while_loop.cc, control_flow.cc,
// loop_state.h, value_buffers.h): where the state and the values inside live, which copies run, and
// the HBM bound. Values are checked by simulation in exact_while_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/collectives/ring_allreduce.h"
#include "compiler/compile.h"
#include "compiler/hlo/parser.h"
#include "compiler/lowering/control/loop_state.h"
#include "test/compiler/lowering/control_flow_modules.h"
#include "test/compiler/lowering/lower_test_util.h"

namespace tpusim {
namespace {

using testing::Board;
using testing::Compile;
using testing::Find;
using ::testing::HasSubstr;
using testing::Slurp;

int Count(const lowering::LoweredModule& m, const std::string& name) {
  int n = 0;
  for (const auto& op : m.ops) n += op.name == name;
  return n;
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(LowerControlFlow, WhileLoopExampleComputesValuesInItsState) {
  auto c = Compile(Slurp("examples/hlo/while_loop.hlo"));
  ASSERT_TRUE(c);
  const lowering::LoweredModule& m = c->lowered;
  // The body's dot multiplies the carried x by itself: x is a weight, not a batch to split.
  EXPECT_FALSE(m.data_parallel);
  EXPECT_TRUE(m.exact);
  for (const auto& op : m.ops) EXPECT_THAT(op.note, ::testing::Not(HasSubstr("timing"))) << op.name;
  const lowering::LoweredOp* init = Find(m, "while.init");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->executions, 1);
  EXPECT_EQ(init->hbm_bytes, 2u * 16 * 16 * 4 + 4);  // x copied (read, write), the counter filled
  // next = i + 1 and t = tanh(x . x) are computed straight into the state: no copy.
  EXPECT_EQ(Find(m, "while.carry"), nullptr);
  EXPECT_EQ(Find(m, "y")->executions, 10);
}

TEST(LowerControlFlow, SwapBodyStagesElementsReadFromTheStateAfterTheBody) {
  auto c = Compile(testing::kSwapLoop);
  ASSERT_TRUE(c);
  const lowering::LoweredOp* carry = Find(c->lowered, "loop.carry");
  ASSERT_NE(carry, nullptr);
  EXPECT_EQ(carry->executions, 6);
  // b, q and p go to staging and back (4 x 8 KiB each way), a + b straight in.
  constexpr uint64_t kElement = 8 * 256 * 4;
  EXPECT_EQ(carry->hbm_bytes, (3 * 4 + 2) * kElement);
  // The init copy, the staging copies, then the copies into the state.
  EXPECT_EQ(Occurrences(c->lowered.programs[0], ".tag \"loop\""), 3u);
}

TEST(LowerControlFlow, RootElementsAreInPlaceUnchangedOrCopied) {
  auto parsed = hlo::ParseHlo(testing::kSwapLoop, "swap.hlo");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const std::vector<lowering::RootElement> r = lowering::BodyRootElements(*parsed->Find("body"));
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(r[0].in_place);  // next = i + 1 reads i last
  EXPECT_EQ(r[1].state_element, 2);
  EXPECT_FALSE(r[2].in_place);  // b is read after a + b: by the root, as the new a
  EXPECT_EQ(r[2].value->name(), "sum");
  EXPECT_EQ(r[3].state_element, 4);
  EXPECT_EQ(r[4].state_element, 3);
  // Element 2 (w) passes through unchanged; h + tanh(h . w), a loop fusion, reads h last.
  auto dot = Compile(testing::kDotLoop);
  ASSERT_TRUE(dot);
  const std::vector<lowering::RootElement> d =
      lowering::BodyRootElements(*dot->optimized.Find("body"));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(d[0].in_place);
  EXPECT_TRUE(d[1].in_place);
  EXPECT_EQ(d[1].value->opcode(), hlo::Opcode::kFusion);
  EXPECT_EQ(d[2].state_element, 2);
  EXPECT_EQ(Find(dot->lowered, "loop.carry"), nullptr);
}

TEST(LowerControlFlow, ScanUpdatesTheStateInPlaceAndCopiesOnlyTheCounter) {
  auto c = Compile(testing::kScanLoop);
  ASSERT_TRUE(c);
  const lowering::LoweredOp* update = Find(c->lowered, "buf2");
  ASSERT_NE(update, nullptr);
  EXPECT_EQ(update->hbm_bytes, 2u * 128 * 4);  // the row only, no copy of the buffer
  // next = i + 1 cannot overwrite i, which the update reads later: copied after the body.
  const lowering::LoweredOp* carry = Find(c->lowered, "loop.carry");
  ASSERT_NE(carry, nullptr);
  EXPECT_EQ(carry->hbm_bytes, 2u * 4);
}

TEST(LowerControlFlow, EachCallSiteGetsItsOwnBuffersAndPassedThroughLeavesAreCopied) {
  auto c = Compile(testing::kCalls);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->lowered.exact);
  EXPECT_EQ(Count(c->lowered, "fusion"), 2);  // %f's root (m * y - x fused), once per call
  const lowering::LoweredOp* copy = Find(c->lowered, "pair.result");
  ASSERT_NE(copy, nullptr);  // %g returns its parameter y
  EXPECT_EQ(copy->hbm_bytes, 2u * 16 * 128 * 4);
  EXPECT_EQ(Find(c->lowered, "ab.result"), nullptr);  // computed in the call's buffer
}

TEST(LowerControlFlow, DataParallelLoopCopiesEachCoresShare) {
  auto c = Compile(R"(HloModule dp
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
  %e = f32[64,128]{1,0} exponential(%x)
  ROOT %out = (s32[], f32[64,128]{1,0}) tuple(%next, %e)
}
ENTRY %main (x: f32[64,128]) -> f32[64,128] {
  %x = f32[64,128]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64,128]{1,0}) tuple(%zero, %x)
  %loop = (s32[], f32[64,128]{1,0}) while(%init), condition=%cond, body=%body
  ROOT %r = f32[64,128]{1,0} get-tuple-element(%loop), index=1
})");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->lowered.data_parallel);
  EXPECT_EQ(c->lowered.batch_per_core, 8);
  const lowering::LoweredOp* init = Find(c->lowered, "loop.init");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->hbm_bytes, 2u * 8 * 128 * 4 + 4);  // 8 rows per core, the counter filled
  EXPECT_TRUE(c->lowered.exact);
}

// A body that sums over the batch: the partial sums of the cores are all-reduced inside the
// loop, on every trip; the loop's results are whole, so the entry adds no all-reduce.
TEST(LowerControlFlow, DataParallelBodyAllReducesWhatItReducesOverTheBatch) {
  auto c = Compile(R"(HloModule dp_sum
%cond (s: (s32[], f32[64,128], f32[])) -> pred[] {
  %s = (s32[], f32[64,128]{1,0}, f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}
%body (s: (s32[], f32[64,128], f32[])) -> (s32[], f32[64,128], f32[]) {
  %s = (s32[], f32[64,128]{1,0}, f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[64,128]{1,0} get-tuple-element(%s), index=1
  %acc = f32[] get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %y = f32[64,128]{1,0} exponential(%x)
  %zero = f32[] constant(0)
  %total = f32[] reduce(%y, %zero), dimensions={0,1}, to_apply=%add
  %acc2 = f32[] add(%acc, %total)
  ROOT %out = (s32[], f32[64,128]{1,0}, f32[]) tuple(%next, %y, %acc2)
}
ENTRY %main (x: f32[64,128], a: f32[]) -> (f32[64,128], s32[], f32[]) {
  %x = f32[64,128]{1,0} parameter(0)
  %a = f32[] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64,128]{1,0}, f32[]) tuple(%zero, %x, %a)
  %loop = (s32[], f32[64,128]{1,0}, f32[]) while(%init), condition=%cond, body=%body
  %r = f32[64,128]{1,0} get-tuple-element(%loop), index=1
  %count = s32[] get-tuple-element(%loop), index=0
  %sum = f32[] get-tuple-element(%loop), index=2
  ROOT %t = (f32[64,128]{1,0}, s32[], f32[]) tuple(%r, %count, %sum)
})");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->lowered.data_parallel);
  const lowering::LoweredOp* all_reduce = Find(c->lowered, "total.all-reduce");
  ASSERT_NE(all_reduce, nullptr);
  EXPECT_EQ(all_reduce->executions, 3);
  int all_reduces = 0;
  for (const auto& op : c->lowered.ops) all_reduces += op.opcode == "all-reduce";
  EXPECT_EQ(all_reduces, 1);  // not the counter, not the loop's sum again
}

// Two f32[2048,2048] dots per trip: 32 MiB of body values above a 32 MiB plan do not fit
// in 64 MiB of HBM.
TEST(LowerControlFlow, LoopValuesBeyondHbmAreResourceExhausted) {
  const std::string text = R"(HloModule big, replica_count=8
%cond (s: (s32[], f32[2048,2048])) -> pred[] {
  %s = (s32[], f32[2048,2048]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(2)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[2048,2048])) -> (s32[], f32[2048,2048]) {
  %s = (s32[], f32[2048,2048]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[2048,2048]{1,0} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %square = f32[2048,2048]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %fourth = f32[2048,2048]{1,0} dot(%square, %square), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %y = f32[2048,2048]{1,0} add(%fourth, %x)
  ROOT %out = (s32[], f32[2048,2048]{1,0}) tuple(%next, %y)
}
ENTRY %main (x: f32[2048,2048]) -> f32[2048,2048] {
  %x = f32[2048,2048]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[2048,2048]{1,0}) tuple(%zero, %x)
  %loop = (s32[], f32[2048,2048]{1,0}) while(%init), condition=%cond, body=%body
  ROOT %r = f32[2048,2048]{1,0} get-tuple-element(%loop), index=1
})";
  CompileTarget small = Board();
  small.lowering.hbm_bytes = uint64_t{64} << 20;
  small.hbm_bytes_per_core = (int64_t{64} << 20) - static_cast<int64_t>(lowering::kMailboxBytes);
  auto c = CompileForBoard(text, "big.hlo", small);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("RESOURCE_EXHAUSTED: Ran out of memory"));
  EXPECT_THAT(c.status().message(), HasSubstr("inside while bodies, calls and conditional"));
  EXPECT_THAT(c.status().message(), HasSubstr("XLA label: %square"));
  CompileTarget large = small;  // twice the HBM: it fits
  large.lowering.hbm_bytes = uint64_t{128} << 20;
  large.hbm_bytes_per_core = (int64_t{128} << 20) - static_cast<int64_t>(lowering::kMailboxBytes);
  EXPECT_TRUE(Compile(text, large));
}

}  // namespace
}  // namespace tpusim
