// The exact dot on shapes that need several K chunks and result blocks (exact_dot_plan.h):
// each module is compiled for v3-8, simulated with random inputs and compared with the
// reference evaluator (sim_values_util.h). Every shape is ragged (not a multiple of the
// 128 tiles), and each test first checks that the plan really cuts it as it says.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "compiler/lowering/dot/exact_dot_kernel.h"
#include "compiler/lowering/dot/exact_dot_plan.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using lowering::ExactDotShape;

// The shape dot_emitter.cc builds for the dot (addresses do not matter to the plan).
ExactDotShape Shape(int64_t m, int64_t k, int64_t n, bool a_t, bool b_t, bool b_bf16 = false) {
  ExactDotShape d;
  d.m = m, d.k = k, d.n = n;
  d.a = {0, m, k, a_t, false};
  d.b = {0, k, n, b_t, b_bf16};
  return d;
}

std::string Module(const std::string& lhs, const std::string& rhs, const std::string& out,
                   int lhs_contracting, int rhs_contracting) {
  return "HloModule m, replica_count=8\nENTRY %main (a: " + lhs + ", b: " + rhs + ") -> " + out +
         " {\n  %a = " + lhs + "{1,0} parameter(0)\n  %b = " + rhs +
         "{1,0} parameter(1)\n  ROOT %dot = " + out + "{1,0} dot(%a, %b), lhs_contracting_dims={" +
         std::to_string(lhs_contracting) + "}, rhs_contracting_dims={" +
         std::to_string(rhs_contracting) + "}\n}\n";
}

using testing::ExpectMatch;

TEST(ExactDotStream, KChunksWithRaggedKAndN) {
  const auto p = lowering::PlanExactDot(Shape(37, 3000, 300, false, false));
  EXPECT_GT(p.k_chunks(), 2);
  EXPECT_NE(p.k % p.kc, 0);
  ExpectMatch(Module("f32[37,3000]", "f32[3000,300]", "f32[37,300]", 1, 0));
}

TEST(ExactDotStream, TransposedLhsAndBf16RhsInKChunks) {
  const auto p = lowering::PlanExactDot(Shape(37, 3000, 300, true, false, true));
  EXPECT_GT(p.k_chunks(), 2);
  ExpectMatch(Module("f32[3000,37]", "bf16[3000,300]", "f32[37,300]", 0, 0));
}

TEST(ExactDotStream, SeveralRowAndColumnBlocksWithTransposedRhs) {
  const auto p = lowering::PlanExactDot(Shape(1500, 40, 1500, false, true));
  EXPECT_GT(p.m_blocks(), 1);
  EXPECT_GT(p.n_blocks(), 1);
  EXPECT_FALSE(p.a.resident || p.b.resident);
  ExpectMatch(Module("f32[1500,40]", "f32[1500,40]", "f32[1500,1500]", 1, 1));
}

TEST(ExactDotStream, TransposedLhsInRowBlocksAgainstAResidentRhs) {
  const auto p = lowering::PlanExactDot(Shape(2100, 30, 130, true, false));
  EXPECT_EQ(p.m_blocks(), 2);
  EXPECT_TRUE(p.b.resident);
  ExpectMatch(Module("f32[30,2100]", "f32[30,130]", "f32[2100,130]", 0, 0));
}

TEST(ExactDotStream, CorruptedResultIsDetected) {  // the comparison itself is a real check
  testing::ValueRun r = testing::SimulateValues(
      Module("f32[1500,40]", "f32[1500,40]", "f32[1500,1500]", 1, 1), /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

TEST(ExactDotStream, ProgramSizeDoesNotGrowWithTheShape) {  // loops, not unrolled blocks
  auto lines = [](const ExactDotShape& d) {
    const std::string k = lowering::ExactDotKernel(d);
    return std::count(k.begin(), k.end(), '\n');
  };
  // mnist-cnn's dense layer (dot.20, dot.91, dot.92) and the same with 4x the long side.
  EXPECT_EQ(lines(Shape(25, 147456, 256, false, false)),
            lines(Shape(25, 4 * 147456, 256, false, false)));
  EXPECT_EQ(lines(Shape(25, 256, 147456, false, true)),
            lines(Shape(25, 256, 4 * 147456, false, true)));
  EXPECT_EQ(lines(Shape(147456, 25, 256, true, false)),
            lines(Shape(4 * 147456, 25, 256, true, false)));
  EXPECT_LT(lines(Shape(147456, 25, 256, true, false)), 1000);
}

}  // namespace
}  // namespace tpusim
