// Transposed dot: IR text in, IR text out; what is left alone; values on the board.
#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/transposed_dot.h"
#include "test/compiler/passes/pass_test_util.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim::passes {
namespace {

// Parses, runs the pass and DCE, verifies; the printed entry ("" when nothing changed).
std::string Fold(const std::string& text) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  hlo::Result<bool> r = TransposedDotPass().Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok() || !*r) return "";
  EXPECT_TRUE(DcePass().Run(*m).ok());
  testing::ExpectVerifiesAndReparses(*m);
  return hlo::PrintComputation(*m->entry());
}

constexpr char kHeader[] = R"(HloModule t, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
)";

// A data-parallel weight gradient as JAX writes it: dy^T x summed over the replicas, then
// transposed into the weight's [in, out] for the update. The dot becomes x^T dy, which the
// all-reduce sums as it is; the transpose goes.
const std::string kGradient = std::string(kHeader) + R"(
ENTRY %e (x: f32[64,32], dy: f32[64,256], w: f32[32,256]) -> f32[32,256] {
  %x = f32[64,32] parameter(0)
  %dy = f32[64,256] parameter(1)
  %w = f32[32,256] parameter(2)
  %g = f32[256,32] dot(f32[64,256] %dy, f32[64,32] %x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %r = f32[256,32] all-reduce(f32[256,32] %g), replica_groups={}, to_apply=%add
  %t = f32[32,256]{0,1} transpose(f32[256,32] %r), dimensions={1,0}
  %lr = f32[] constant(0.125)
  %lrs = f32[32,256] broadcast(f32[] %lr), dimensions={}
  %step = f32[32,256] multiply(f32[32,256]{0,1} %t, f32[32,256] %lrs)
  ROOT %w2 = f32[32,256] subtract(f32[32,256] %w, f32[32,256] %step)
}
)";

TEST(PassTransposedDot, AGradientTransposedAfterItsAllReduceIsComputedTransposed) {
  const std::string out = Fold(kGradient);
  EXPECT_NE(out.find("%g.1 = f32[32,256] dot(f32[64,32] %x, f32[64,256] %dy), "
                     "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%r.1 = f32[32,256] all-reduce(f32[32,256] %g.1), replica_groups={}, "
                     "to_apply=%add"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("transpose("), std::string::npos);
  EXPECT_NE(out.find("multiply(f32[32,256] %r.1, "), std::string::npos);
  tpusim::testing::ExpectMatch(kGradient);  // the whole pipeline, on the board
}

// A batched dot's free dimensions swapped behind its batch: the operands swap, batch
// dimensions pair as before.
TEST(PassTransposedDot, BatchDimensionsStayInFront) {
  const std::string out = Fold(std::string(kHeader) + R"(
ENTRY %e (a: f32[4,16,8], b: f32[4,8,32]) -> f32[4,32,16] {
  %a = f32[4,16,8] parameter(0)
  %b = f32[4,8,32] parameter(1)
  %d = f32[4,16,32] dot(f32[4,16,8] %a, f32[4,8,32] %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %t = f32[4,32,16] transpose(f32[4,16,32] %d), dimensions={0,2,1}
}
)");
  EXPECT_NE(out.find("ROOT %d.1 = f32[4,32,16] dot(f32[4,8,32] %b, f32[4,16,8] %a), "
                     "lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, "
                     "rhs_contracting_dims={2}"),
            std::string::npos)
      << out;
}

// Left alone: the dot read elsewhere too (it would be computed twice), a transpose that
// moves the batch dimension, an all-reduce read by more than the transpose.
TEST(PassTransposedDot, SharedDotsAndOtherPermutationsStay) {
  EXPECT_EQ(Fold(std::string(kHeader) + R"(
ENTRY %e (x: f32[64,32], y: f32[64,16]) -> (f32[16,32], f32[32,16]) {
  %x = f32[64,32] parameter(0)
  %y = f32[64,16] parameter(1)
  %d = f32[32,16] dot(f32[64,32] %x, f32[64,16] %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %t = f32[16,32] transpose(f32[32,16] %d), dimensions={1,0}
  ROOT %r = (f32[16,32], f32[32,16]) tuple(f32[16,32] %t, f32[32,16] %d)
}
)"),
            "");
  EXPECT_EQ(Fold(std::string(kHeader) + R"(
ENTRY %e (a: f32[4,16,8], b: f32[4,8,32]) -> f32[16,4,32] {
  %a = f32[4,16,8] parameter(0)
  %b = f32[4,8,32] parameter(1)
  %d = f32[4,16,32] dot(f32[4,16,8] %a, f32[4,8,32] %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %t = f32[16,4,32] transpose(f32[4,16,32] %d), dimensions={1,0,2}
}
)"),
            "");
  EXPECT_EQ(Fold(std::string(kHeader) + R"(
ENTRY %e (x: f32[64,32], y: f32[64,16]) -> (f32[16,32], f32[32,16]) {
  %x = f32[64,32] parameter(0)
  %y = f32[64,16] parameter(1)
  %d = f32[32,16] dot(f32[64,32] %x, f32[64,16] %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %r = f32[32,16] all-reduce(f32[32,16] %d), replica_groups={}, to_apply=%add
  %t = f32[16,32] transpose(f32[32,16] %r), dimensions={1,0}
  ROOT %o = (f32[16,32], f32[32,16]) tuple(f32[16,32] %t, f32[32,16] %r)
}
)"),
            "");
}

}  // namespace
}  // namespace tpusim::passes
