// The exact dot with batch dimensions (exact_dot_kernel.h, DotBatch): attention's score and
// context dots over [batch, heads] with ragged sizes, and a transposed LHS with one batch
// dimension. Each module is compiled for v3-8, simulated with random inputs and compared
// with the reference evaluator (sim_values_util.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "compiler/lowering/dot/exact_dot_kernel.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

// Q K^T over batch dims {0, 2} of [batch, seq, heads, dim] (B arrives transposed, rows
// strided by heads x dim), then P V with V's batch dims {0, 2} and contracting seq.
constexpr const char* kAttention = R"(HloModule attention, replica_count=8
ENTRY %main (q: f32[2,37,3,40], k: f32[2,37,3,40], v: f32[2,37,3,40]) -> (f32[2,3,37,37], f32[2,3,37,40]) {
  %q = f32[2,37,3,40]{3,2,1,0} parameter(0)
  %k = f32[2,37,3,40]{3,2,1,0} parameter(1)
  %v = f32[2,37,3,40]{3,2,1,0} parameter(2)
  %s = f32[2,3,37,37]{3,2,1,0} dot(%q, %k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
  %c = f32[2,3,37,40]{3,2,1,0} dot(%s, %v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  ROOT %t = (f32[2,3,37,37]{3,2,1,0}, f32[2,3,37,40]{3,2,1,0}) tuple(%s, %c)
}
)";

// A^T (contracting its rows) against B: two K tiles, three column tiles, 5 instances.
constexpr const char* kTransposedLhs = R"(HloModule batched, replica_count=8
ENTRY %main (a: f32[5,150,20], b: f32[5,150,300]) -> f32[5,20,300] {
  %a = f32[5,150,20]{2,1,0} parameter(0)
  %b = f32[5,150,300]{2,1,0} parameter(1)
  ROOT %d = f32[5,20,300]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
)";

TEST(ExactBatchedDot, AttentionScoresAndContextOverBatchAndHeads) {
  testing::ExpectMatch(kAttention);
}

TEST(ExactBatchedDot, TransposedLhsWithOneBatchDimension) { testing::ExpectMatch(kTransposedLhs); }

TEST(ExactBatchedDot, CorruptedResultIsDetected) {  // the comparison itself is a real check
  testing::ValueRun r = testing::SimulateValues(kAttention, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

TEST(ExactBatchedDot, ProgramSizeDoesNotGrowWithTheBatch) {  // instances are a loop
  auto lines = [](int64_t outer, int64_t inner) {
    lowering::ExactDotShape d;
    d.m = 128, d.k = 64, d.n = 128;
    d.a = {0, 128, 64, false, false, 768, 128 * 768, 64};
    d.b = {0, 64, 128, true, false, 768, 128 * 768, 64};
    d.batch = {outer, inner};
    const std::string k = lowering::ExactDotKernel(d);
    return std::count(k.begin(), k.end(), '\n');
  };
  EXPECT_EQ(lines(2, 3), lines(32, 12));  // BERT-base's attention: 32 x 12 instances
}

}  // namespace
}  // namespace tpusim
