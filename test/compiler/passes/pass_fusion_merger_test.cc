// Fusion merging (IR in, IR out): a loop fusion merged into all its fusion users when that
// moves no more bytes, a cheap loop fusion copied into readers that already read its
// operands, and the merges that would move more bytes or that the target cannot compute left
// alone.
#include "compiler/passes/fusion/fusion_merger.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "test/compiler/passes/pass_test_util.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// The masked gradient select(relu > 0, dz, 0) (a loop fusion over the ReLU output y and dz)
// read by batch norm's gradient sums (of dy and of dy * (x - mean), one multi-output fusion)
// and by its dx pass, both of which read x; y itself is normalize +
// ReLU of x, also a result of the module (as a convolution reads it).
constexpr const char* kGradient = R"(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}
%relu_of_x (x: bf16[2,4,4,256], mean: f32[256], scale: f32[256], zero: bf16[]) -> bf16[2,4,4,256] {
  %x = bf16[2,4,4,256] parameter(0)
  %mean = f32[256] parameter(1)
  %scale = f32[256] parameter(2)
  %zero = bf16[] parameter(3)
  %xf = f32[2,4,4,256] convert(bf16[2,4,4,256] %x)
  %m = f32[2,4,4,256] broadcast(f32[256] %mean), dimensions={3}
  %s = f32[2,4,4,256] broadcast(f32[256] %scale), dimensions={3}
  %centered = f32[2,4,4,256] subtract(f32[2,4,4,256] %xf, f32[2,4,4,256] %m)
  %normal = f32[2,4,4,256] multiply(f32[2,4,4,256] %centered, f32[2,4,4,256] %s)
  %narrow = bf16[2,4,4,256] convert(f32[2,4,4,256] %normal)
  %zeros = bf16[2,4,4,256] broadcast(bf16[] %zero), dimensions={}
  ROOT %relu = bf16[2,4,4,256] maximum(bf16[2,4,4,256] %narrow, bf16[2,4,4,256] %zeros)
}
%masked (y: bf16[2,4,4,256], dz: bf16[2,4,4,256], zero: bf16[]) -> bf16[2,4,4,256] {
  %y = bf16[2,4,4,256] parameter(0)
  %dz = bf16[2,4,4,256] parameter(1)
  %zero = bf16[] parameter(2)
  %zeros = bf16[2,4,4,256] broadcast(bf16[] %zero), dimensions={}
  %on = pred[2,4,4,256] compare(bf16[2,4,4,256] %y, bf16[2,4,4,256] %zeros), direction=GT
  ROOT %dy = bf16[2,4,4,256] select(pred[2,4,4,256] %on, bf16[2,4,4,256] %dz, bf16[2,4,4,256] %zeros)
}
%sums_of_dy (dy: bf16[2,4,4,256], x: bf16[2,4,4,256], mean: f32[256], z: f32[]) -> (f32[256], f32[256]) {
  %dy = bf16[2,4,4,256] parameter(0)
  %x = bf16[2,4,4,256] parameter(1)
  %mean = f32[256] parameter(2)
  %z = f32[] parameter(3)
  %w = f32[2,4,4,256] convert(bf16[2,4,4,256] %dy)
  %sum = f32[256] reduce(f32[2,4,4,256] %w, f32[] %z), dimensions={0,1,2}, to_apply=%add
  %xf = f32[2,4,4,256] convert(bf16[2,4,4,256] %x)
  %m = f32[2,4,4,256] broadcast(f32[256] %mean), dimensions={3}
  %centered = f32[2,4,4,256] subtract(f32[2,4,4,256] %xf, f32[2,4,4,256] %m)
  %product = f32[2,4,4,256] multiply(f32[2,4,4,256] %w, f32[2,4,4,256] %centered)
  %dot = f32[256] reduce(f32[2,4,4,256] %product, f32[] %z), dimensions={0,1,2}, to_apply=%add
  ROOT %t = (f32[256], f32[256]) tuple(f32[256] %sum, f32[256] %dot)
}
%dx_pass (dy: bf16[2,4,4,256], x: bf16[2,4,4,256], mean: f32[256]) -> bf16[2,4,4,256] {
  %dy = bf16[2,4,4,256] parameter(0)
  %x = bf16[2,4,4,256] parameter(1)
  %mean = f32[256] parameter(2)
  %w = f32[2,4,4,256] convert(bf16[2,4,4,256] %dy)
  %xf = f32[2,4,4,256] convert(bf16[2,4,4,256] %x)
  %m = f32[2,4,4,256] broadcast(f32[256] %mean), dimensions={3}
  %centered = f32[2,4,4,256] subtract(f32[2,4,4,256] %xf, f32[2,4,4,256] %m)
  %dx = f32[2,4,4,256] multiply(f32[2,4,4,256] %w, f32[2,4,4,256] %centered)
  ROOT %narrow = bf16[2,4,4,256] convert(f32[2,4,4,256] %dx)
}
ENTRY %e (x: bf16[2,4,4,256], mean: f32[256], scale: f32[256], dz: bf16[2,4,4,256]) -> (bf16[2,4,4,256], f32[256], bf16[2,4,4,256]) {
  %x = bf16[2,4,4,256] parameter(0)
  %mean = f32[256] parameter(1)
  %scale = f32[256] parameter(2)
  %dz = bf16[2,4,4,256] parameter(3)
  %zero = bf16[] constant(0)
  %z = f32[] constant(0)
  %y = bf16[2,4,4,256] fusion(bf16[2,4,4,256] %x, f32[256] %mean, f32[256] %scale, bf16[] %zero), kind=kLoop, calls=%relu_of_x
  %dy = bf16[2,4,4,256] fusion(bf16[2,4,4,256] %y, bf16[2,4,4,256] %dz, bf16[] %zero), kind=kLoop, calls=%masked
  %sums = (f32[256], f32[256]) fusion(bf16[2,4,4,256] %dy, bf16[2,4,4,256] %x, f32[256] %mean, f32[] %z), kind=kInput, calls=%sums_of_dy
  %db = f32[256] get-tuple-element((f32[256], f32[256]) %sums), index=0
  %dx = bf16[2,4,4,256] fusion(bf16[2,4,4,256] %dy, bf16[2,4,4,256] %x, f32[256] %mean), kind=kLoop, calls=%dx_pass
  ROOT %t = (bf16[2,4,4,256], f32[256], bf16[2,4,4,256]) tuple(bf16[2,4,4,256] %y, f32[256] %db, bf16[2,4,4,256] %dx)
})";

// Runs the pass with the TensorCore target; verifies and re-parses the result.
hlo::HloModule Merge(const std::string& text, bool* changed,
                     const target::TargetDescription& target = lowering::TensorCoreTarget()) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  hlo::Result<bool> r = FusionMergerPass(target).Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  *changed = r.ok() && *r;
  testing::ExpectVerifiesAndReparses(*m);
  return std::move(m).value();
}

bool ReadsParameter(const HloInstruction& fusion, const std::string& name) {
  for (const HloInstruction* o : fusion.operands())
    if (o->name() == name) return true;
  return false;
}

// The masked gradient merges into the sums and the dx pass (each then reads y and dz instead
// of dy: 4 bytes an element in two readers against 2 written, 4 read by it and 2 + 2 read
// back); then normalize + ReLU is copied into both, which read x already: ReLU's mask is
// recomputed from x and y is read by nobody but the module's result.
TEST(PassFusionMerger, TheReluGradientRecomputesItsMaskFromX) {
  bool changed = false;
  hlo::HloModule m = Merge(kGradient, &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  const HloInstruction& root = *e.root();
  const HloInstruction& y = *root.operand(0);
  const HloInstruction& db = *root.operand(1)->operand(0);  // the sums
  const HloInstruction& dx = *root.operand(2);
  EXPECT_EQ(y.GetWord("kind"), "kLoop");  // kept for the result
  ASSERT_EQ(db.opcode(), Opcode::kFusion);
  ASSERT_EQ(dx.opcode(), Opcode::kFusion);
  EXPECT_EQ(db.GetWord("kind"), "kInput");
  EXPECT_EQ(dx.GetWord("kind"), "kLoop");
  for (const HloInstruction* f : {&db, &dx}) {
    EXPECT_TRUE(ReadsParameter(*f, "x")) << f->name();
    EXPECT_TRUE(ReadsParameter(*f, "dz")) << f->name();
    for (const HloInstruction* o : f->operands())
      EXPECT_NE(o->opcode(), Opcode::kFusion) << f->name() << " reads " << o->name();
  }
  int fusions = 0;
  for (const auto& i : e.instructions()) fusions += i->opcode() == Opcode::kFusion;
  EXPECT_EQ(fusions, 3);  // y, the sums, dx: the masked gradient is gone
  EXPECT_TRUE(lowering::TensorCoreTarget().ExactReductionFusion(db));
  EXPECT_TRUE(lowering::TensorCoreTarget().ExactLoopFusion(dx));
}

// A target without a kernel for the merged fusions keeps them apart.
TEST(PassFusionMerger, NothingMergesThatTheTargetCannotCompute) {
  class NoKernels : public target::TargetDescription {
   public:
    bool ExactConvolution(const HloInstruction&) const override { return true; }
    bool ExactBatchNorm(const HloInstruction&) const override { return true; }
    bool ExactBatchNormFusion(const HloInstruction&) const override { return true; }
    bool ExactBf16Move(const HloInstruction&) const override { return true; }
    bool ExactBf16Reads(const hlo::Shape&) const override { return true; }
  } none;
  bool changed = true;
  hlo::HloModule m = Merge(kGradient, &changed, none);
  EXPECT_FALSE(changed);
  EXPECT_EQ(m.entry()->instructions().size(), 12u);
}

// An f32 sum a + b read by `readers` loop fusions that read neither a nor b.
std::string SumReadByMany(int readers) {
  std::string types, results, body;
  for (int k = 1; k <= readers; ++k) {
    const std::string n = std::to_string(k);
    types += std::string(k > 1 ? ", " : "") + "f32[64,256]";
    results += std::string(k > 1 ? ", " : "") + "%r" + n;
    body += "  %k" + n + " = f32[] constant(" + n + ")\n  %r" + n +
            " = f32[64,256] fusion(f32[64,256] %s, f32[] %k" + n + "), kind=kLoop, calls=%scaled\n";
  }
  return R"(HloModule t
%sum (a: f32[64,256], b: f32[64,256]) -> f32[64,256] {
  %a = f32[64,256] parameter(0)
  %b = f32[64,256] parameter(1)
  ROOT %s = f32[64,256] add(f32[64,256] %a, f32[64,256] %b)
}
%scaled (s: f32[64,256], k: f32[]) -> f32[64,256] {
  %s = f32[64,256] parameter(0)
  %k = f32[] parameter(1)
  %kk = f32[64,256] broadcast(f32[] %k), dimensions={}
  ROOT %r = f32[64,256] multiply(f32[64,256] %s, f32[64,256] %kk)
}
ENTRY %e (a: f32[64,256], b: f32[64,256]) -> ()" +
         types + R"() {
  %a = f32[64,256] parameter(0)
  %b = f32[64,256] parameter(1)
  %s = f32[64,256] fusion(f32[64,256] %a, f32[64,256] %b), kind=kLoop, calls=%sum
)" + body +
         "  ROOT %t = (" + types + ") tuple(" + results + ")\n}\n";
}

// Merged into four readers, the sum's copies would read 8 bytes an element each (32 in all)
// where it reads 8, writes 4 and is read back 4 x 4 (28): it stays. Into three (24 against
// 24) it merges.
TEST(PassFusionMerger, AProducerWhoseCopiesWouldReadMoreStays) {
  bool changed = true;
  Merge(SumReadByMany(4), &changed);
  EXPECT_FALSE(changed);
  hlo::HloModule three = Merge(SumReadByMany(3), &changed);
  EXPECT_TRUE(changed);
  for (const HloInstruction* r : three.entry()->root()->operands())
    EXPECT_TRUE(ReadsParameter(*r, "a") && ReadsParameter(*r, "b")) << r->name();
}

}  // namespace
}  // namespace tpusim::passes
