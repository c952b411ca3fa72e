// Host evaluator: data movement and control flow.
#include <gtest/gtest.h>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"

namespace tpusim::eval {
namespace {

using V = std::vector<double>;

// Evaluates a module (computations + ENTRY body) and returns every result's elements.
std::vector<V> EvalAll(const std::string& entry, const std::string& comps = "",
                       const std::vector<Value>& args = {}) {
  Result<std::vector<Value>> r =
      EvaluateText("HloModule t\n" + comps + "\nENTRY %e {\n" + entry + "\n}\n", args);
  EXPECT_TRUE(r.ok()) << r.status().message();
  std::vector<V> out;
  if (r.ok()) {
    for (const Value& v : *r) out.push_back(v.data);
  }
  return out;
}

V Eval(const std::string& entry, const std::string& comps = "",
       const std::vector<Value>& args = {}) {
  std::vector<V> all = EvalAll(entry, comps, args);
  return all.empty() ? V{} : all[0];
}

const char kX[] = "%x = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n";

TEST(EvalDataMovement, BroadcastReshapeTranspose) {
  EXPECT_EQ(Eval("%v = s32[3] constant({1, 2, 3})\n"
                 "ROOT %b = s32[2,3] broadcast(%v), dimensions={1}"),
            (V{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(Eval("%v = s32[2] constant({1, 2})\nROOT %b = s32[2,3] broadcast(%v), dimensions={0}"),
            (V{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(Eval("%s = f32[] constant(7)\nROOT %b = f32[2] broadcast(%s), dimensions={}"),
            (V{7, 7}));
  EXPECT_EQ(Eval(std::string(kX) + "ROOT %r = s32[3,2] reshape(%x)"), (V{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Eval(std::string(kX) + "ROOT %t = s32[3,2] transpose(%x), dimensions={1,0}"),
            (V{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(Eval("%i = s32[2,3,4] iota(), iota_dimension=2\n"
                 "%j = s32[2,3,4] iota(), iota_dimension=0\n"
                 "%k = s32[2,3,4] add(%i, %j)\n"
                 "%t = s32[4,2,3] transpose(%k), dimensions={2,0,1}\n"
                 "ROOT %s = s32[1,2,1] slice(%t), slice={[3:4], [0:2], [1:2]}"),
            (V{3, 4}));
  EXPECT_EQ(Eval(std::string(kX) + "ROOT %c = s32[2,3] copy(%x)"), (V{1, 2, 3, 4, 5, 6}));
}

TEST(EvalDataMovement, ReverseSliceConcatenate) {
  EXPECT_EQ(Eval(std::string(kX) + "ROOT %r = s32[2,3] reverse(%x), dimensions={0,1}"),
            (V{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(Eval(std::string(kX) + "ROOT %s = s32[1,2] slice(%x), slice={[1:2], [0:3:2]}"),
            (V{4, 6}));
  EXPECT_EQ(Eval(std::string(kX) + "ROOT %c = s32[2,6] concatenate(%x, %x), dimensions={1}"),
            (V{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  EXPECT_EQ(Eval(std::string(kX) + "%y = s32[1,3] constant({{7, 8, 9}})\n"
                                   "ROOT %c = s32[3,3] concatenate(%x, %y), dimensions={0}"),
            (V{1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(EvalDataMovement, DynamicSlicesClampStarts) {
  std::string h = std::string(kX) +
                  "%one = s32[] constant(1)\n%big = s32[] constant(5)\n"
                  "%neg = s32[] constant(-3)\n";
  EXPECT_EQ(Eval(h + "ROOT %d = s32[1,2] dynamic-slice(%x, %one, %one), "
                     "dynamic_slice_sizes={1,2}"),
            (V{5, 6}));
  EXPECT_EQ(Eval(h + "ROOT %d = s32[2,2] dynamic-slice(%x, %big, %big), "
                     "dynamic_slice_sizes={2,2}"),
            (V{2, 3, 5, 6}));  // starts clamped to (0, 1)
  EXPECT_EQ(Eval(h + "%u = s32[1,2] constant({{0, 0}})\n"
                     "ROOT %d = s32[2,3] dynamic-update-slice(%x, %u, %big, %neg)"),
            (V{1, 2, 3, 0, 0, 6}));  // starts clamped to (1, 0)
}

TEST(EvalDataMovement, PadNegativeAndInterior) {
  std::string h = "%x = s32[3] constant({1, 2, 3})\n%z = s32[] constant(0)\n";
  EXPECT_EQ(Eval(h + "ROOT %p = s32[8] pad(%x, %z), padding=1_2_1"), (V{0, 1, 0, 2, 0, 3, 0, 0}));
  EXPECT_EQ(Eval(h + "ROOT %p = s32[4] pad(%x, %z), padding=-2_1_1"), (V{2, 0, 3, 0}));
  EXPECT_EQ(Eval(h + "ROOT %p = s32[1] pad(%x, %z), padding=0_-2"), (V{1}));
  EXPECT_EQ(Eval(std::string(kX) + "%z = s32[] constant(9)\n"
                                   "ROOT %p = s32[3,4] pad(%x, %z), padding=1_0x0_1"),
            (V{9, 9, 9, 9, 1, 2, 3, 9, 4, 5, 6, 9}));
}

const char kLoop[] = R"(
%cond (s: (s32[], f32[])) -> pred[] {
  %s = (s32[], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[])) -> (s32[], f32[]) {
  %s = (s32[], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %two = f32[] constant(2)
  %j = s32[] add(%i, %one)
  %y = f32[] multiply(%x, %two)
  ROOT %t = (s32[], f32[]) tuple(%j, %y)
}
)";

TEST(EvalControl, WhileTripCounts) {
  // Starting at 0 the loop runs 5 times, at 3 twice, at 7 never.
  for (auto [start, trips] : {std::pair{0, 5}, {3, 2}, {7, 0}}) {
    std::vector<V> r =
        EvalAll("%i0 = s32[] constant(" + std::to_string(start) +
                    ")\n%x0 = f32[] constant(1)\n%t = (s32[], f32[]) tuple(%i0, %x0)\n"
                    "ROOT %w = (s32[], f32[]) while(%t), condition=%cond, body=%body",
                kLoop);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0], (V{static_cast<double>(std::max(start, 5))}));
    EXPECT_EQ(r[1], (V{static_cast<double>(1 << trips)}));
  }
}

TEST(EvalControl, ConditionalCallFusion) {
  std::string comps = R"(
%neg (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %n = f32[] negate(%x)
}
%dbl (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %d = f32[] add(%x, %x)
}
%id (x: f32[]) -> f32[] {
  ROOT %x = f32[] parameter(0)
}
)";
  std::string h = "%a = f32[] constant(3)\n";
  EXPECT_EQ(Eval(h + "%p = pred[] constant(true)\nROOT %c = f32[] conditional(%p, %a, %a), "
                     "true_computation=%neg, false_computation=%dbl",
                 comps),
            (V{-3}));
  EXPECT_EQ(Eval(h + "%p = pred[] constant(false)\nROOT %c = f32[] conditional(%p, %a, %a), "
                     "true_computation=%neg, false_computation=%dbl",
                 comps),
            (V{6}));
  for (auto [index, want] : {std::pair{0, -3.0}, {1, 6.0}, {2, 3.0}, {9, 3.0}, {-1, 3.0}}) {
    EXPECT_EQ(Eval(h + "%i = s32[] constant(" + std::to_string(index) +
                       ")\nROOT %c = f32[] conditional(%i, %a, %a, %a), "
                       "branch_computations={%neg, %dbl, %id}",
                   comps),
              (V{want}));
  }
  EXPECT_EQ(Eval(h + "ROOT %c = f32[] call(%a), to_apply=%dbl", comps), (V{6}));
  EXPECT_EQ(Eval(h + "ROOT %f = f32[] fusion(%a), kind=kLoop, calls=%neg", comps), (V{-3}));
}

TEST(EvalControl, RootTupleIsFlattened) {
  Result<std::vector<Value>> r = EvaluateText(
      "HloModule t\nENTRY %e {\n%a = f32[] constant(1)\n%b = s32[2] constant({2, 3})\n"
      "%in = (f32[], s32[2]) tuple(%a, %b)\nROOT %t = (f32[], (f32[], s32[2])) tuple(%a, %in)\n}\n",
      {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].data, (V{1}));
  EXPECT_TRUE((*r)[1].IsTuple());
  EXPECT_EQ((*r)[1].elements[1].data, (V{2, 3}));
}

TEST(EvalControl, InfiniteLoopIsAnError) {
  Result<hlo::HloModule> m =
      hlo::ParseHlo(std::string("HloModule t\n") + kLoop +
                    "ENTRY %e {\n%i0 = s32[] constant(0)\n"
                    "%x0 = f32[] constant(1)\n%t = (s32[], f32[]) tuple(%i0, %x0)\n"
                    "ROOT %w = (s32[], f32[]) while(%t), condition=%cond, "
                    "body=%body\n}\n");
  ASSERT_TRUE(m.ok());
  EvalOptions opts;
  opts.max_while_iterations = 3;
  Result<std::vector<Value>> r = Evaluate(*m, {}, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "%w: ran more than 3 iterations");
}

}  // namespace
}  // namespace tpusim::eval
