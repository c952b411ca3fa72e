// Embedding lookups and label picks on the gather kernel (compiler/lowering/data/gather_kernel.h):
// simulated values against the evaluator. Inputs are seeded: s32 indices lie in [0, 8), so a table
// of 5 rows also checks the clamp of indices past its end.
#include <gtest/gtest.h>

#include <string>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

// Computed values, every one equal to the evaluator's (slices are copied).
void ExpectCopied(const std::string& hlo) {
  testing::ValueRun r = testing::SimulateValues(hlo);
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_EQ(r.error, 0);
}

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

// optax's softmax_cross_entropy_with_integer_labels picks log p[i, label[i]] with
// take_along_axis: as older JAX writes it, an iota of row numbers concatenated to the labels
// gathers elements by [row, col] vectors (600 of them: a batch of 512 and a tail); labels in
// [0, 8) against 5 columns check the column clamp.
TEST(GatherKernel, TakeAlongAxisByRowAndColumnVectors) {
  ExpectCopied(R"(HloModule m, replica_count=8
ENTRY %main (logp: f32[600,5], labels: s32[600]) -> f32[600] {
  %logp = f32[600,5]{1,0} parameter(0)
  %labels = s32[600]{0} parameter(1)
  %rows = s32[600,1]{1,0} iota(), iota_dimension=0
  %cols = s32[600,1]{1,0} reshape(%labels)
  %idx = s32[600,2]{1,0} concatenate(%rows, %cols), dimensions={1}
  ROOT %g = f32[600]{0} gather(%logp, %idx), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}
})");
}

// The same as newer JAX writes it: the row is a batching dimension of operand and indices.
TEST(GatherKernel, TakeAlongAxisWithABatchingDimension) {
  ExpectCopied(R"(HloModule m, replica_count=8
ENTRY %main (logp: f32[1100,5], labels: s32[1100,1]) -> f32[1100] {
  %logp = f32[1100,5]{1,0} parameter(0)
  %labels = s32[1100,1]{1,0} parameter(1)
  ROOT %g = f32[1100]{0} gather(%logp, %labels), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}
})");
}

// Data parallel (a single-replica module split over the cores): each core looks up its share
// of the token ids in the whole table (BERT's embeddings), and picks its share's labels from
// its share of the logits; the summed loss is all-reduced.
TEST(GatherKernel, LookupsAndLabelPicksOfEachCoresShare) {
  testing::ExpectMatch(R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (table: f32[6,128], w: f32[128,5], ids: s32[64], labels: s32[64,1]) -> (f32[64,128], f32[]) {
  %table = f32[6,128]{1,0} parameter(0)
  %w = f32[128,5]{1,0} parameter(1)
  %ids = s32[64]{0} parameter(2)
  %labels = s32[64,1]{1,0} parameter(3)
  %emb = f32[64,128]{1,0} gather(%table, %ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}
  %logits = f32[64,5]{1,0} dot(%emb, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %picked = f32[64]{0} gather(%logits, %labels), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}
  %zero = f32[] constant(0)
  %loss = f32[] reduce(%picked, %zero), dimensions={0}, to_apply=%add
  ROOT %t = (f32[64,128], f32[]) tuple(%emb, %loss)
})");
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
