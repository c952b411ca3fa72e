// Host evaluator: gather, scatter, sort and batch norm.
#include <gtest/gtest.h>

#include <cmath>

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
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
%lt_key (a: s32[], b: s32[], c: f32[], d: f32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  ROOT %l = pred[] compare(%a, %b), direction=LT
}
)";

std::vector<V> EvalAll(const std::string& entry, const std::vector<Value>& args = {}) {
  Result<std::vector<Value>> r = EvaluateText(
      std::string("HloModule t\n") + kComps + "\nENTRY %e {\n" + entry + "\n}\n", args);
  EXPECT_TRUE(r.ok()) << r.status().message();
  std::vector<V> out;
  if (r.ok()) {
    for (const Value& v : *r) out.push_back(v.data);
  }
  return out;
}
V Eval(const std::string& entry, const std::vector<Value>& args = {}) {
  std::vector<V> all = EvalAll(entry, args);
  return all.empty() ? V{} : all[0];
}

// A [4, 2] embedding table: row r is {10r, 10r + 1}.
const char kTable[] = "%w = f32[4,2] constant({{0, 1}, {10, 11}, {20, 21}, {30, 31}})\n";

TEST(EvalGather, EmbeddingLookup) {
  // jnp.take(w, ids, axis=0) as JAX lowers it: ids s32[3,1], index_vector_dim=1.
  EXPECT_EQ(Eval(std::string(kTable) +
                 "%ids = s32[3,1] constant({{2}, {0}, {3}})\n"
                 "ROOT %g = f32[3,2] gather(%w, %ids), offset_dims={1}, collapsed_slice_dims={0}, "
                 "start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}"),
            (V{20, 21, 0, 1, 30, 31}));
  // Scalar indices with an implicit index vector (index_vector_dim = rank), batch [2,2].
  EXPECT_EQ(Eval(std::string(kTable) +
                 "%ids = s32[2,2] constant({{1, 1}, {3, 9}})\n"
                 "ROOT %g = f32[2,2,2] gather(%w, %ids), offset_dims={2}, "
                 "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, "
                 "slice_sizes={1,2}"),
            (V{10, 11, 10, 11, 30, 31, 30, 31}));  // 9 clamps to 3
}

TEST(EvalGather, SlicesWithOffsetsAndBatchingDims) {
  // 2-D start indices picking [2,1] windows (not collapsed).
  EXPECT_EQ(Eval(std::string(kTable) +
                 "%s = s32[2,2] constant({{0, 1}, {2, 0}})\n"
                 "ROOT %g = f32[2,2,1] gather(%w, %s), offset_dims={1,2}, "
                 "collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, "
                 "slice_sizes={2,1}"),
            (V{1, 11, 20, 30}));
  // Operand batching: x[b, ids[b]] for b in 0..1.
  EXPECT_EQ(
      Eval("%x = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n%i = s32[2,1] constant({{2}, {0}})\n"
           "ROOT %g = f32[2] gather(%x, %i), offset_dims={}, collapsed_slice_dims={1}, "
           "operand_batching_dims={0}, start_indices_batching_dims={0}, "
           "start_index_map={1}, index_vector_dim=1, slice_sizes={1,1}"),
      (V{3, 4}));
}

TEST(EvalScatter, EmbeddingGradientAddsDuplicates) {
  EXPECT_EQ(Eval("%z = f32[4,2] broadcast(f32[] constant(0)), dimensions={}\n"
                 "%ids = s32[3,1] constant({{1}, {3}, {1}})\n"
                 "%u = f32[3,2] constant({{1, 2}, {3, 4}, {5, 6}})\n"
                 "ROOT %s = f32[4,2] scatter(%z, %ids, %u), update_window_dims={1}, "
                 "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                 "index_vector_dim=1, to_apply=%add"),
            (V{0, 0, 6, 8, 0, 0, 3, 4}));
  // Out-of-bounds indices are skipped.
  EXPECT_EQ(Eval("%z = f32[3] constant({1, 1, 1})\n%ids = s32[2] constant({5, 0})\n"
                 "%u = f32[2] constant({7, 9})\n"
                 "ROOT %s = f32[3] scatter(%z, %ids, %u), update_window_dims={}, "
                 "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                 "index_vector_dim=1, to_apply=%add"),
            (V{10, 1, 1}));
}

TEST(EvalSort, StableWithComparatorAndPayload) {
  EXPECT_EQ(Eval("%x = f32[2,3] constant({{3, 1, 2}, {0, -1, 5}})\n"
                 "ROOT %s = f32[2,3] sort(%x), dimensions={1}, to_apply=%lt"),
            (V{1, 2, 3, -1, 0, 5}));
  EXPECT_EQ(Eval("%x = f32[2,2] constant({{3, 1}, {0, 4}})\n"
                 "ROOT %s = f32[2,2] sort(%x), dimensions={0}, to_apply=%lt"),
            (V{0, 1, 3, 4}));
  // Equal keys keep their order: payload 10, 30 for key 1.
  std::vector<V> r = EvalAll(
      "%k = s32[4] constant({1, 0, 1, 0})\n%p = f32[4] constant({10, 20, 30, 40})\n"
      "ROOT %s = (s32[4], f32[4]) sort(%k, %p), dimensions={0}, "
      "is_stable=true, to_apply=%lt_key");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (V{0, 0, 1, 1}));
  EXPECT_EQ(r[1], (V{20, 40, 10, 30}));
}

TEST(EvalBatchNorm, TrainingInferenceGrad) {
  // Feature 1 of x[2,2] = {{1, 10}, {3, 30}}: means 2 and 20, variances 1 and 100.
  std::string h =
      "%x = f32[2,2] constant({{1, 10}, {3, 30}})\n%s = f32[2] constant({1, 2})\n"
      "%o = f32[2] constant({0, 5})\n";
  std::vector<V> t = EvalAll(h +
                             "ROOT %t = (f32[2,2], f32[2], f32[2]) batch-norm-training(%x, %s, "
                             "%o), epsilon=0, feature_index=1");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], (V{-1, 3, 1, 7}));
  EXPECT_EQ(t[1], (V{2, 20}));
  EXPECT_EQ(t[2], (V{1, 100}));
  EXPECT_EQ(Eval(h + "%m = f32[2] constant({2, 20})\n%v = f32[2] constant({3, 99})\n"
                     "ROOT %y = f32[2,2] batch-norm-inference(%x, %s, %o, %m, %v), epsilon=1, "
                     "feature_index=1"),
            (V{-0.5, 3, 0.5, 7}));
  std::vector<V> g = EvalAll(h +
                             "%m = f32[2] constant({2, 20})\n%v = f32[2] constant({1, 100})\n"
                             "%dy = f32[2,2] constant({{1, 1}, {3, 0}})\n"
                             "ROOT %g = (f32[2,2], f32[2], f32[2]) batch-norm-grad(%x, %s, %m, "
                             "%v, %dy), epsilon=0, feature_index=1");
  ASSERT_EQ(g.size(), 3u);
  // Feature 0: xhat = {-1, 1}, dy = {1, 3}: mean dy 2, mean dy*xhat 1 -> dx = 1*(dy-2-xhat*1).
  // Feature 1: xhat = {-1, 1}, dy = {1, 0}: mean 0.5, mean dy*xhat -0.5 -> dx =
  // 2/10*(dy-.5+.5xhat).
  EXPECT_EQ(g[0][0], 0);
  EXPECT_EQ(g[0][2], 0);
  EXPECT_FLOAT_EQ(g[0][1], 0);
  EXPECT_FLOAT_EQ(g[0][3], 0);
  EXPECT_EQ(g[1], (V{2, -1}));  // sum(dy * xhat)
  EXPECT_EQ(g[2], (V{4, 1}));   // sum(dy)
}

}  // namespace
}  // namespace tpusim::eval
