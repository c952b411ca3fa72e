// Sibling multi-output fusion: per-feature sums that read one value become one fusion (IR in,
// IR out), and a sum that reads another's result stays apart.
#include "compiler/passes/fusion/multi_output_fusion.h"

#include <gtest/gtest.h>

#include <set>

#include "compiler/hlo/parser.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "compiler/passes/fusion/fusion.h"
#include "test/compiler/passes/adam_update_module.h"
#include "test/compiler/passes/pass_test_util.h"

namespace tpusim::passes {
namespace {

constexpr const char* kAdd = R"(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}
)";

// Fuses elementwise producers into the sums, then merges siblings; verifies and re-parses.
hlo::HloModule FuseSums(const std::string& entry, bool* changed) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(std::string(kAdd) + entry);
  EXPECT_TRUE(m.ok()) << m.status().message();
  const target::TargetDescription& target = lowering::TensorCoreTarget();
  EXPECT_TRUE(ElementwiseFusionPass(&target).Run(*m).ok());
  hlo::Result<bool> r = MultiOutputFusionPass(target).Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  *changed = r.ok() && *r;
  testing::ExpectVerifiesAndReparses(*m);
  return std::move(m).value();
}

int Fusions(const hlo::HloComputation& c) {
  int n = 0;
  for (const auto& i : c.instructions()) n += i->opcode() == hlo::Opcode::kFusion;
  return n;
}

// Batch norm's statistics: the sum of x and of x^2 read x once.
TEST(PassMultiOutputFusion, SiblingSumsOfOneValueBecomeOneFusion) {
  bool changed = false;
  hlo::HloModule m = FuseSums(R"(ENTRY %e (x: bf16[2,4,4,256]) -> (f32[256], f32[256]) {
  %x = bf16[2,4,4,256] parameter(0)
  %wide = f32[2,4,4,256] convert(bf16[2,4,4,256] %x)
  %z = f32[] constant(0)
  %sum = f32[256] reduce(f32[2,4,4,256] %wide, f32[] %z), dimensions={0,1,2}, to_apply=%add
  %sq = f32[2,4,4,256] multiply(f32[2,4,4,256] %wide, f32[2,4,4,256] %wide)
  %squares = f32[256] reduce(f32[2,4,4,256] %sq, f32[] %z), dimensions={0,1,2}, to_apply=%add
  ROOT %t = (f32[256], f32[256]) tuple(f32[256] %sum, f32[256] %squares)
})",
                              &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  ASSERT_EQ(Fusions(e), 1);
  const hlo::HloInstruction& root = *e.root();
  const hlo::HloInstruction& sum = *root.operand(0);
  const hlo::HloInstruction& squares = *root.operand(1);
  ASSERT_EQ(sum.opcode(), hlo::Opcode::kGetTupleElement);
  ASSERT_EQ(squares.opcode(), hlo::Opcode::kGetTupleElement);
  EXPECT_EQ(sum.operand(0), squares.operand(0));
  EXPECT_EQ(sum.GetInt("index"), 0);
  EXPECT_EQ(squares.GetInt("index"), 1);
  const hlo::HloInstruction& f = *sum.operand(0);
  EXPECT_EQ(f.GetWord("kind"), "kInput");
  ASSERT_EQ(f.operand_count(), 2u);  // x once, and the zero
  EXPECT_EQ(f.operand(0)->name(), "x");
  EXPECT_EQ(f.fused_computation()->root()->opcode(), hlo::Opcode::kTuple);
  EXPECT_TRUE(lowering::TensorCoreTarget().ExactReductionFusion(f));
}

// flax's batch-norm gradient sums dy, dy (x - mean) and -dy c: all three in one read, the
// third on the feature stream's third accumulator.
TEST(PassMultiOutputFusion, ThreeSiblingSumsBecomeOneFusion) {
  bool changed = false;
  hlo::HloModule m = FuseSums(
      R"(ENTRY %e (x: bf16[2,4,4,256], dy: bf16[2,4,4,256], mean: f32[256], c: f32[256]) -> (f32[256], f32[256], f32[256]) {
  %x = bf16[2,4,4,256] parameter(0)
  %dy = bf16[2,4,4,256] parameter(1)
  %mean = f32[256] parameter(2)
  %c = f32[256] parameter(3)
  %xw = f32[2,4,4,256] convert(bf16[2,4,4,256] %x)
  %dw = f32[2,4,4,256] convert(bf16[2,4,4,256] %dy)
  %mb = f32[2,4,4,256] broadcast(f32[256] %mean), dimensions={3}
  %cb = f32[2,4,4,256] broadcast(f32[256] %c), dimensions={3}
  %xc = f32[2,4,4,256] subtract(f32[2,4,4,256] %xw, f32[2,4,4,256] %mb)
  %p = f32[2,4,4,256] multiply(f32[2,4,4,256] %dw, f32[2,4,4,256] %xc)
  %q = f32[2,4,4,256] multiply(f32[2,4,4,256] %dw, f32[2,4,4,256] %cb)
  %nq = f32[2,4,4,256] negate(f32[2,4,4,256] %q)
  %z = f32[] constant(0)
  %s1 = f32[256] reduce(f32[2,4,4,256] %dw, f32[] %z), dimensions={0,1,2}, to_apply=%add
  %s2 = f32[256] reduce(f32[2,4,4,256] %p, f32[] %z), dimensions={0,1,2}, to_apply=%add
  %s3 = f32[256] reduce(f32[2,4,4,256] %nq, f32[] %z), dimensions={0,1,2}, to_apply=%add
  ROOT %t = (f32[256], f32[256], f32[256]) tuple(f32[256] %s1, f32[256] %s2, f32[256] %s3)
})",
      &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  ASSERT_EQ(Fusions(e), 1);
  const hlo::HloInstruction& root = *e.root();
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(root.operand(k)->opcode(), hlo::Opcode::kGetTupleElement);
    EXPECT_EQ(root.operand(k)->GetInt("index"), k);
    EXPECT_EQ(root.operand(k)->operand(0), root.operand(0)->operand(0));
  }
  const hlo::HloInstruction& f = *root.operand(0)->operand(0);
  EXPECT_EQ(f.fused_computation()->root()->operand_count(), 3u);
  EXPECT_TRUE(lowering::TensorCoreTarget().ExactReductionFusion(f));
}

// sum(x - sum(x)) reads the first sum: merging would make the fusion read its own result.
TEST(PassMultiOutputFusion, ASumThatReadsAnotherStaysApart) {
  bool changed = false;
  hlo::HloModule m = FuseSums(R"(ENTRY %e (x: f32[2,4,4,128]) -> f32[128] {
  %x = f32[2,4,4,128] parameter(0)
  %z = f32[] constant(0)
  %sum = f32[128] reduce(f32[2,4,4,128] %x, f32[] %z), dimensions={0,1,2}, to_apply=%add
  %b = f32[2,4,4,128] broadcast(f32[128] %sum), dimensions={3}
  %d = f32[2,4,4,128] subtract(f32[2,4,4,128] %x, f32[2,4,4,128] %b)
  ROOT %again = f32[128] reduce(f32[2,4,4,128] %d, f32[] %z), dimensions={0,1,2}, to_apply=%add
})",
                              &changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(m.entry()->root()->opcode(), hlo::Opcode::kFusion);
  EXPECT_EQ(m.entry()->root()->fused_computation()->root()->opcode(), hlo::Opcode::kReduce);
}

// ReLU's gradient dy = select(y > 0, g, 0), read by batch norm's gradient sums and by its
// dx pass: the sums compute it and output it too (producer-consumer multi-output fusion), so
// dy is written once and not read back by the sums.
TEST(PassMultiOutputFusion, AProducerTheSumsReadIsComputedInsideThem) {
  bool changed = false;
  hlo::HloModule m = FuseSums(
      R"(ENTRY %e (y: bf16[2,4,4,128], g: bf16[2,4,4,128], x: bf16[2,4,4,128]) -> (f32[128], bf16[2,4,4,128]) {
  %y = bf16[2,4,4,128] parameter(0)
  %g = bf16[2,4,4,128] parameter(1)
  %x = bf16[2,4,4,128] parameter(2)
  %zero = bf16[] constant(0)
  %zeros = bf16[2,4,4,128] broadcast(bf16[] %zero), dimensions={}
  %on = pred[2,4,4,128] compare(bf16[2,4,4,128] %y, bf16[2,4,4,128] %zeros), direction=GT
  %dy = bf16[2,4,4,128] select(pred[2,4,4,128] %on, bf16[2,4,4,128] %g, bf16[2,4,4,128] %zeros)
  %wide = f32[2,4,4,128] convert(bf16[2,4,4,128] %dy)
  %z = f32[] constant(0)
  %sum = f32[128] reduce(f32[2,4,4,128] %wide, f32[] %z), dimensions={0,1,2}, to_apply=%add
  %dx = bf16[2,4,4,128] multiply(bf16[2,4,4,128] %dy, bf16[2,4,4,128] %x)
  ROOT %t = (f32[128], bf16[2,4,4,128]) tuple(f32[128] %sum, bf16[2,4,4,128] %dx)
})",
      &changed);
  EXPECT_TRUE(changed);
  const hlo::HloInstruction& root = *m.entry()->root();
  const hlo::HloInstruction& sum = *root.operand(0);
  ASSERT_EQ(sum.opcode(), hlo::Opcode::kGetTupleElement);
  const hlo::HloInstruction& both = *sum.operand(0);
  EXPECT_EQ(both.GetWord("kind"), "kInput");
  ASSERT_EQ(both.shape().tuple_shapes.size(), 2u);  // the sum, then dy
  // dx (a multiply of its own) reads dy from the sums' fusion
  const hlo::HloInstruction& dx = *root.operand(1);
  ASSERT_EQ(dx.opcode(), hlo::Opcode::kMultiply);
  bool reads_dy = false;
  for (const hlo::HloInstruction* o : dx.operands())
    reads_dy |= o->opcode() == hlo::Opcode::kGetTupleElement && o->operand(0) == &both &&
                o->GetInt("index") == 1;
  EXPECT_TRUE(reads_dy);
  EXPECT_TRUE(lowering::TensorCoreTarget().ExactReductionFusion(both));
}

// Adam's new m and v are results and feed the new weights: the three loop fusions become
// one whose root is the tuple of w, m and v (one pass over HBM instead of three), which the
// results read through get-tuple-elements.
TEST(PassMultiOutputFusion, AnOptimizersMomentsAreComputedInsideItsWeightUpdate) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(tpusim::testing::kAdamUpdate);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const target::TargetDescription& target = lowering::TensorCoreTarget();
  ASSERT_TRUE(ElementwiseFusionPass(&target).Run(*m).ok());
  EXPECT_EQ(Fusions(*m->entry()), 3);
  hlo::Result<bool> r = MultiOutputFusionPass(target).Run(*m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(*r);
  testing::ExpectVerifiesAndReparses(*m);
  EXPECT_EQ(Fusions(*m->entry()), 1);
  const hlo::HloInstruction& root = *m->entry()->root();
  ASSERT_EQ(root.operand_count(), 3u);
  const hlo::HloInstruction& all = *root.operand(0)->operand(0);
  ASSERT_EQ(all.opcode(), hlo::Opcode::kFusion);
  EXPECT_EQ(all.GetWord("kind"), "kLoop");
  ASSERT_EQ(all.shape().tuple_shapes.size(), 3u);
  std::set<int64_t> indices;  // w first, then m and v in the order the update reads them
  for (size_t k = 0; k < 3; ++k) {
    const hlo::HloInstruction& e = *root.operand(k);
    ASSERT_EQ(e.opcode(), hlo::Opcode::kGetTupleElement);
    EXPECT_EQ(e.operand(0), &all);
    indices.insert(e.GetInt("index").value_or(-1));
  }
  EXPECT_EQ(root.operand(0)->GetInt("index"), 0);
  EXPECT_EQ(indices, (std::set<int64_t>{0, 1, 2}));
  EXPECT_TRUE(target.ExactMultiOutputLoopFusion(all));
}

}  // namespace
}  // namespace tpusim::passes
