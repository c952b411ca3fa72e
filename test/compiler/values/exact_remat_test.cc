// Rematerialization with values: a program that fits a core's HBM only with a value
// recomputed (compiler/passes/rematerialization.h) runs and matches the evaluator.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

// exp(x) and tanh(x) (1 MiB each) feed the first dots and the last fusion; while d4 is made,
// they, s, d3 and d4 and the 4 MiB of parameters are live: 9 MiB.
constexpr const char* kHeldAcrossDots = R"(HloModule remat_chain
ENTRY main {
  x = f32[512,512] parameter(0)
  w1 = f32[512,512] parameter(1)
  w2 = f32[512,512] parameter(2)
  w3 = f32[512,512] parameter(3)
  a1 = f32[512,512] exponential(x)
  a2 = f32[512,512] tanh(x)
  d1 = f32[512,512] dot(a1, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[512,512] dot(a2, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[512,512] add(d1, d2)
  d3 = f32[512,512] dot(s, w3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d4 = f32[512,512] dot(d3, s), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d5 = f32[512,512] dot(d4, d3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r1 = f32[512,512] add(d5, a1)
  ROOT r = f32[512,512] multiply(r1, a2)
})";

TEST(ExactRematerialization, ARecomputedValueMatchesTheEvaluator) {
  sim::BoardConfig board = sim::LoadConfig("v3-8");
  board.core.hbm_bytes = uint64_t{17} << 19;  // 8.5 MiB: the program needs 9 MiB as written
  auto compiled =
      CompileForBoard(kHeldAcrossDots, "test.hlo", driver::TargetFor(board, /*infeed=*/false));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  const CompileReport& report = compiled.value()->report;
  ASSERT_EQ(report.recomputed.size(), 1u);
  EXPECT_EQ(report.recomputed[0].value, "a1");
  EXPECT_GT(report.peak_before_recomputing, static_cast<int64_t>(board.core.hbm_bytes));
  EXPECT_LT(report.peak_hbm_bytes, report.peak_before_recomputing);

  const testing::ValueRun r = testing::SimulateValuesOn(board, kHeldAcrossDots);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_GE(r.error, 0);
  EXPECT_LT(r.error, 1e-5);
}

}  // namespace
}  // namespace tpusim
