// Embedding lookups on the gather kernel (compiler/lowering/gather_kernel.h): simulated
// values against the evaluator. Inputs are seeded: s32 indices lie in [0, 8), so a table of
// 5 rows also checks the clamp of indices past its end.
#include <gtest/gtest.h>

#include "test/compiler/sim_values_util.h"

namespace tpusim {
namespace {

TEST(GatherKernel, EmbeddingLookupInBatchesClampsAsXla) {
  // 1,100 indices: one full SMEM batch of 1,024 and a tail of 76.
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
ENTRY %main (table: f32[5,200], ids: s32[11,100]) -> f32[11,100,200] {
  %table = f32[5,200]{1,0} parameter(0)
  %ids = s32[11,100]{1,0} parameter(1)
  ROOT %g = f32[11,100,200]{2,1,0} gather(%table, %ids), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,200}
})");
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);  // rows are copied
}

TEST(GatherKernel, CorruptedResultIsDetected) {
  testing::ValueRun r = testing::SimulateValues(R"(HloModule m, replica_count=8
ENTRY %main (table: f32[5,200], ids: s32[30]) -> f32[30,200] {
  %table = f32[5,200]{1,0} parameter(0)
  %ids = s32[30]{0} parameter(1)
  ROOT %g = f32[30,200]{1,0} gather(%table, %ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,200}
})",
                                                /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 0.5);
}

}  // namespace
}  // namespace tpusim
