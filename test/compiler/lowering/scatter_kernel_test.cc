// Embedding gradients on the scatter kernel (compiler/lowering/data/scatter_kernel.h): simulated
// values against the evaluator. Seeded s32 inputs lie in [0, 8): a table of 5 rows sees
// duplicates in every group and indices past its end, which XLA skips.
#include <gtest/gtest.h>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

// 300 rows: two full groups of 128 and a tail of 44; duplicates accumulate in update order.
constexpr const char* kGradient = R"(HloModule m, replica_count=8
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}
ENTRY %main (table: f32[5,200], ids: s32[3,100], upd: f32[3,100,200]) -> f32[5,200] {
  %table = f32[5,200]{1,0} parameter(0)
  %ids = s32[3,100]{1,0} parameter(1)
  %upd = f32[3,100,200]{2,1,0} parameter(2)
  ROOT %s = f32[5,200]{1,0} scatter(%table, %ids, %upd), update_window_dims={2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=%sum
})";

TEST(ScatterKernel, RowScatterAddWithDuplicatesAndSkippedIndices) {
  testing::ValueRun r = testing::SimulateValues(kGradient);
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);  // the same f32 additions in the same order
}

// BERT's form: a zero table of 30 rows (all indices inside, rows of 1,100 floats: two vregs
// per row, the last one partly used), an index vector dimension of size 1.
TEST(ScatterKernel, ZeroTableWithIndexVectorDimensionAndWideRows) {
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(%x, %y)
}
ENTRY %main (ids: s32[70,1], upd: f32[70,1100]) -> f32[30,1100] {
  %ids = s32[70,1]{1,0} parameter(0)
  %upd = f32[70,1100]{1,0} parameter(1)
  %zero = f32[] constant(0)
  %table = f32[30,1100]{1,0} broadcast(%zero), dimensions={}
  ROOT %s = f32[30,1100]{1,0} scatter(%table, %ids, %upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%sum
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);
}

TEST(ScatterKernel, CorruptedResultIsDetected) {
  testing::ValueRun r = testing::SimulateValues(kGradient, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 0.1);
}

}  // namespace
}  // namespace tpusim
