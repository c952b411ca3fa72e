// Host evaluator: reduce, reduce-window and select-and-scatter.
#include <gtest/gtest.h>

#include "compiler/eval/evaluator.h"

namespace tpusim::eval {
namespace {

using V = std::vector<double>;

const char kComps[] = R"(
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE
}
%argmax (a: f32[], i: s32[], b: f32[], j: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %i = s32[] parameter(1)
  %b = f32[] parameter(2)
  %j = s32[] parameter(3)
  %keep = pred[] compare(%a, %b), direction=GE
  %v = f32[] select(%keep, %a, %b)
  %k = s32[] select(%keep, %i, %j)
  ROOT %t = (f32[], s32[]) tuple(%v, %k)
}
%add_then_double (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %two = f32[] constant(2)
  %bb = f32[] multiply(%b, %two)
  ROOT %s = f32[] add(%a, %bb)
}
)";

std::vector<V> EvalAll(const std::string& entry) {
  Result<std::vector<Value>> r =
      EvaluateText(std::string("HloModule t\n") + kComps + "\nENTRY %e {\n" + entry + "\n}\n", {});
  EXPECT_TRUE(r.ok()) << r.status().message();
  std::vector<V> out;
  if (r.ok()) {
    for (const Value& v : *r) out.push_back(v.data);
  }
  return out;
}
V Eval(const std::string& entry) {
  std::vector<V> all = EvalAll(entry);
  return all.empty() ? V{} : all[0];
}

const char kX[] =
    "%x = f32[2,3] constant({{1, 5, 3}, {4, 2, 6}})\n%z = f32[] constant(0)\n"
    "%ninf = f32[] constant(-inf)\n";

TEST(EvalReduce, SumAndMaxOverDimensions) {
  std::string h = kX;
  EXPECT_EQ(Eval(h + "ROOT %r = f32[3] reduce(%x, %z), dimensions={0}, to_apply=%add"),
            (V{5, 7, 9}));
  EXPECT_EQ(Eval(h + "ROOT %r = f32[2] reduce(%x, %ninf), dimensions={1}, to_apply=%max"),
            (V{5, 6}));
  EXPECT_EQ(Eval(h + "ROOT %r = f32[] reduce(%x, %ninf), dimensions={0,1}, to_apply=%max"), (V{6}));
  EXPECT_EQ(Eval(h + "ROOT %r = f32[2,3] reduce(%x, %z), dimensions={}, to_apply=%add"),
            (V{1, 5, 3, 4, 2, 6}));
  // A non-trivial reducer goes through the general path: 0 + 2*1 + 2*5 + 2*3.
  EXPECT_EQ(Eval(h + "ROOT %r = f32[2] reduce(%x, %z), dimensions={1}, to_apply=%add_then_double"),
            (V{18, 24}));
}

TEST(EvalReduce, VariadicArgmax) {
  std::vector<V> r = EvalAll(std::string(kX) +
                             "%i = s32[2,3] iota(), iota_dimension=1\n%zi = s32[] constant(0)\n"
                             "ROOT %r = (f32[2], s32[2]) reduce(%x, %i, %ninf, %zi), "
                             "dimensions={1}, to_apply=%argmax");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (V{5, 6}));
  EXPECT_EQ(r[1], (V{1, 2}));
}

TEST(EvalReduceWindow, PoolingStridesPaddingDilation) {
  std::string h =
      "%x = f32[4] constant({1, 2, 3, 4})\n%z = f32[] constant(0)\n"
      "%ninf = f32[] constant(-inf)\n";
  EXPECT_EQ(Eval(h + "ROOT %r = f32[3] reduce-window(%x, %z), window={size=2}, to_apply=%add"),
            (V{3, 5, 7}));
  EXPECT_EQ(Eval(h + "ROOT %r = f32[2] reduce-window(%x, %ninf), window={size=2 stride=2}, "
                     "to_apply=%max"),
            (V{2, 4}));
  EXPECT_EQ(Eval(h + "ROOT %r = f32[3] reduce-window(%x, %z), window={size=3 stride=2 pad=1_2}, "
                     "to_apply=%add"),
            (V{3, 9, 4}));
  // Window dilation 2: windows {x0, x2}, {x1, x3}.
  EXPECT_EQ(Eval(h + "ROOT %r = f32[2] reduce-window(%x, %z), window={size=2 rhs_dilate=2}, "
                     "to_apply=%add"),
            (V{4, 6}));
  // Base dilation 2: input 1 _ 2 _ 3 _ 4, windows of 2 see one element each.
  EXPECT_EQ(Eval(h + "ROOT %r = f32[6] reduce-window(%x, %z), window={size=2 lhs_dilate=2}, "
                     "to_apply=%add"),
            (V{1, 2, 2, 3, 3, 4}));
  EXPECT_EQ(Eval("%x = f32[2,3] constant({{1, 5, 3}, {4, 2, 6}})\n%ninf = f32[] constant(-inf)\n"
                 "ROOT %r = f32[1,2] reduce-window(%x, %ninf), window={size=2x2}, to_apply=%max"),
            (V{5, 6}));
}

TEST(EvalSelectAndScatter, MaxPoolGradient) {
  // Max pool 2 stride 2 over {1, 5, 3, 4, 9, 2}: maxima at 1, 2 (4 >= 3), 4.
  EXPECT_EQ(Eval("%x = f32[6] constant({1, 5, 4, 3, 9, 2})\n%g = f32[3] constant({10, 20, 30})\n"
                 "%z = f32[] constant(0)\nROOT %r = f32[6] select-and-scatter(%x, %g, %z), "
                 "window={size=2 stride=2}, select=%ge, scatter=%add"),
            (V{0, 10, 20, 0, 30, 0}));
  // Overlapping windows add up: size 3 stride 1 over {1, 9, 2, 3}: max 9 twice.
  EXPECT_EQ(Eval("%x = f32[4] constant({1, 9, 2, 3})\n%g = f32[2] constant({1, 2})\n"
                 "%z = f32[] constant(0)\nROOT %r = f32[4] select-and-scatter(%x, %g, %z), "
                 "window={size=3}, select=%ge, scatter=%add"),
            (V{0, 3, 0, 0}));
}

}  // namespace
}  // namespace tpusim::eval
