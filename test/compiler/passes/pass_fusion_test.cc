// Elementwise fusion: what is fused, what stays out, and that the output re-parses.
#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "compiler/passes/fusion/fusion.h"

namespace tpusim::passes {
namespace {

// Parses, fuses, verifies and checks the printed module re-parses to the same text.
// With `target`, per-feature sums are offered to its kernel.
hlo::HloModule Fuse(const std::string& text, bool* changed,
                    const target::TargetDescription* target = nullptr) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  hlo::Result<bool> r = ElementwiseFusionPass(target).Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  *changed = r.ok() && *r;
  hlo::Status v = hlo::VerifyModule(*m);
  EXPECT_TRUE(v.ok()) << v.message();
  std::string printed = hlo::PrintModule(*m);
  hlo::Result<hlo::HloModule> again = hlo::ParseHlo(printed);
  EXPECT_TRUE(again.ok()) << again.status().message() << "\n" << printed;
  if (again.ok()) {
    EXPECT_EQ(hlo::PrintModule(*again), printed);
  }
  return std::move(m).value();
}

int CountOps(const hlo::HloComputation& c, hlo::Opcode op) {
  int n = 0;
  for (const auto& i : c.instructions()) n += i->opcode() == op;
  return n;
}

TEST(PassFusion, FusesAChainWithBroadcast) {
  bool changed = false;
  hlo::HloModule m = Fuse(R"(HloModule t
ENTRY %e {
  %p = f32[8,128] parameter(0)
  %q = f32[8,128] parameter(1)
  %two = f32[] constant(2)
  %b = f32[8,128] broadcast(f32[] %two), dimensions={}
  %a = f32[8,128] add(f32[8,128] %p, f32[8,128] %q)
  %m = f32[8,128] multiply(f32[8,128] %a, f32[8,128] %b)
  ROOT %x = f32[8,128] exponential(f32[8,128] %m)
})",
                          &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  ASSERT_EQ(e.instructions().size(), 4u);  // p, q, two, fusion (the broadcast is fused)
  const hlo::HloInstruction& f = *e.root();
  EXPECT_EQ(f.opcode(), hlo::Opcode::kFusion);
  EXPECT_EQ(f.GetWord("kind"), "kLoop");
  EXPECT_EQ(hlo::PrintInstruction(f),
            "%fusion = f32[8,128] fusion(f32[] %two, f32[8,128] %p, f32[8,128] %q), kind=kLoop, "
            "calls=%fused_computation");
  const hlo::HloComputation* fc = f.fused_computation();
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->parameters().size(), 3u);
  EXPECT_EQ(fc->instructions().size(), 7u);  // 3 params + add, broadcast, multiply, exp
  EXPECT_EQ(fc->root()->opcode(), hlo::Opcode::kExp);
  EXPECT_EQ(m.computations().back().get(), m.entry());
}

TEST(PassFusion, ProducerWithTwoUsersIsNotDuplicated) {
  bool changed = false;
  hlo::HloModule m = Fuse(R"(HloModule t
ENTRY %e {
  %p = f32[16] parameter(0)
  %a = f32[16] add(f32[16] %p, f32[16] %p)
  %b = f32[16] negate(f32[16] %a)
  %c = f32[16] exponential(f32[16] %b)
  %d = f32[16] log(f32[16] %a)
  ROOT %t = (f32[16], f32[16]) tuple(f32[16] %c, f32[16] %d)
})",
                          &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  EXPECT_EQ(CountOps(e, hlo::Opcode::kFusion), 1);
  EXPECT_NE(e.Find("a"), nullptr);  // two users: stays outside
  EXPECT_NE(e.Find("d"), nullptr);  // a group of one: not fused
  EXPECT_EQ(e.Find("b"), nullptr);
  const hlo::HloInstruction* fusion = e.root()->operand(0);
  ASSERT_EQ(fusion->opcode(), hlo::Opcode::kFusion);
  EXPECT_EQ(fusion->operand(0), e.Find("a"));
  EXPECT_EQ(fusion->fused_computation()->instructions().size(), 3u);  // param, negate, exp
}

// ReLU and its gradient mask read one broadcast zero: each fusion gets its own copy and the
// full-size broadcast is gone, unless an unfused op still reads it.
TEST(PassFusion, DuplicatesASharedBroadcastIntoEachFusion) {
  bool changed = false;
  hlo::HloModule m = Fuse(R"(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e {
  %x = f32[8,128] parameter(0)
  %g = f32[8,128] parameter(1)
  %zero = f32[] constant(0)
  %zeros = f32[8,128] broadcast(f32[] %zero), dimensions={}
  %relu = f32[8,128] maximum(f32[8,128] %x, f32[8,128] %zeros)
  %mask = pred[8,128] compare(f32[8,128] %relu, f32[8,128] %zeros), direction=GT
  %dx = f32[8,128] select(pred[8,128] %mask, f32[8,128] %g, f32[8,128] %zeros)
  %zeros2 = f32[8,128] broadcast(f32[] %zero), dimensions={}
  %e2 = f32[8,128] exponential(f32[8,128] %zeros2)
  %r = f32[8] reduce(f32[8,128] %zeros2, f32[] %zero), dimensions={1}, to_apply=%add
  ROOT %t = (f32[8,128], f32[8,128], f32[8,128], f32[8]) tuple(%relu, %dx, %e2, %r)
})",
                          &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  EXPECT_EQ(CountOps(e, hlo::Opcode::kFusion), 3);  // relu; compare + select; exp
  EXPECT_EQ(e.Find("zeros"), nullptr);              // every user fused
  EXPECT_NE(e.Find("zeros2"), nullptr);             // the reduce still reads it
  for (const auto& i : e.instructions()) {
    if (i->opcode() != hlo::Opcode::kFusion) continue;
    EXPECT_EQ(CountOps(*i->fused_computation(), hlo::Opcode::kBroadcast), 1) << i->name();
  }
}

// Found by the differential tester (seed 225410): the inner broadcast of a chain went,
// though the outer one stayed for the tuple and still read it.
TEST(PassFusion, ACopiedProducerStaysWhileACopiedReaderStays) {
  bool changed = false;
  hlo::HloModule m = Fuse(R"(HloModule t
ENTRY %e {
  %p = f32[2] parameter(0)
  %b1 = f32[2,8] broadcast(f32[2] %p), dimensions={0}
  %b2 = f32[2,8,3] broadcast(f32[2,8] %b1), dimensions={0,1}
  %a = f32[2,8,3] abs(f32[2,8,3] %b2)
  ROOT %t = (f32[2,8,3], f32[2,8,3]) tuple(f32[2,8,3] %a, f32[2,8,3] %b2)
})",
                          &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  EXPECT_EQ(CountOps(e, hlo::Opcode::kFusion), 1);
  ASSERT_NE(e.Find("b2"), nullptr);  // the tuple reads it
  EXPECT_NE(e.Find("b1"), nullptr);  // and it reads b1
  EXPECT_EQ(e.Find("b2")->operand(0), e.Find("b1"));
}

TEST(PassFusion, StopsAtNonElementwiseOps) {
  bool changed = false;
  hlo::HloModule m = Fuse(R"(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e {
  %x = f32[8,16] parameter(0)
  %w = f32[16,128] parameter(1)
  %d = f32[8,128] dot(f32[8,16] %x, f32[16,128] %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %n = f32[8,128] negate(f32[8,128] %d)
  %t = f32[8,128] tanh(f32[8,128] %n)
  %z = f32[] constant(0)
  %r = f32[8] reduce(f32[8,128] %t, f32[] %z), dimensions={1}, to_apply=%add
  ROOT %s = f32[8] sqrt(f32[8] %r)
})",
                          &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  EXPECT_EQ(CountOps(e, hlo::Opcode::kFusion), 1);
  EXPECT_EQ(CountOps(e, hlo::Opcode::kDot), 1);
  EXPECT_EQ(CountOps(e, hlo::Opcode::kReduce), 1);
  EXPECT_EQ(e.root()->opcode(), hlo::Opcode::kSqrt);    // alone: not fused
  EXPECT_EQ(m.Find("add")->instructions().size(), 3u);  // reducers are not fused
}

TEST(PassFusion, NothingToFuse) {
  bool changed = true;
  hlo::HloModule m = Fuse(R"(HloModule t
ENTRY %e {
  %p = f32[4] parameter(0)
  %b = f32[2,4] broadcast(f32[4] %p), dimensions={1}
  ROOT %n = f32[2,4] negate(f32[2,4] %b)
}
)",
                          &changed);
  EXPECT_TRUE(changed);  // broadcast + negate
  hlo::Result<bool> again = ElementwiseFusionPass().Run(m);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);  // fusions are not fused again
}

TEST(PassFusion, FusesInsideWhileBodies) {
  bool changed = false;
  hlo::HloModule m = Fuse(R"(HloModule t
%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[4]) %s), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT
}
%body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[4]) %s), index=0
  %one = s32[] constant(1)
  %i2 = s32[] add(s32[] %i, s32[] %one)
  %v = f32[4] get-tuple-element((s32[], f32[4]) %s), index=1
  %e = f32[4] exponential(f32[4] %v)
  %l = f32[4] log(f32[4] %e)
  ROOT %t = (s32[], f32[4]) tuple(s32[] %i2, f32[4] %l)
}
ENTRY %main {
  %p = (s32[], f32[4]) parameter(0)
  ROOT %w = (s32[], f32[4]) while((s32[], f32[4]) %p), condition=%cond, body=%body
})",
                          &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(CountOps(*m.Find("body"), hlo::Opcode::kFusion), 1);
  EXPECT_EQ(CountOps(*m.Find("cond"), hlo::Opcode::kFusion), 0);  // compare alone
}

// A reduce by `and` (or min, argmax, ...) takes its elementwise producers as XLA does
// (kInput), so jnp.all(jnp.isfinite(g)) stores no predicate; an add reduction keeps them apart.
TEST(PassFusion, NonAddReductionsTakeTheirProducers) {
  bool changed = false;
  hlo::HloModule m = Fuse(R"(HloModule t
%and (a: pred[], b: pred[]) -> pred[] {
  %a = pred[] parameter(0)
  %b = pred[] parameter(1)
  ROOT %r = pred[] and(pred[] %a, pred[] %b)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e (p: f32[8,128]) -> (pred[], f32[]) {
  %p = f32[8,128] parameter(0)
  %f = pred[8,128] is-finite(f32[8,128] %p)
  %t = pred[] constant(true)
  %all = pred[] reduce(pred[8,128] %f, pred[] %t), dimensions={0,1}, to_apply=%and
  %sq = f32[8,128] multiply(f32[8,128] %p, f32[8,128] %p)
  %z = f32[] constant(0)
  %sum = f32[] reduce(f32[8,128] %sq, f32[] %z), dimensions={0,1}, to_apply=%add
  ROOT %r = (pred[], f32[]) tuple(pred[] %all, f32[] %sum)
})",
                          &changed);
  EXPECT_TRUE(changed);
  const hlo::HloInstruction& root = *m.entry()->root();
  const hlo::HloInstruction& all = *root.operand(0);
  EXPECT_EQ(all.opcode(), hlo::Opcode::kFusion);
  EXPECT_EQ(all.GetWord("kind"), "kInput");
  EXPECT_EQ(all.fused_computation()->root()->opcode(), hlo::Opcode::kReduce);
  EXPECT_EQ(root.operand(1)->opcode(), hlo::Opcode::kReduce);  // the sum is not fused
  EXPECT_EQ(root.operand(1)->operand(0)->opcode(), hlo::Opcode::kMultiply);
}

// The partitioner's batch norm over a bf16 x widens x once for four readers: each copies the
// convert (reading 2 bytes per element instead of 4) and so does x - mean, which two readers
// share (a convert and a broadcast vector in, 2 bytes read, 4 written). A sum of two f32
// arrays (8 bytes read, 4 written) stays one value.
TEST(PassFusion, CheapProducersThatReadLessThanTheyWriteAreCopied) {
  bool changed = false;
  hlo::HloModule m = Fuse(R"(HloModule t
ENTRY %e (x: bf16[4,256], mean: f32[256], p: f32[4,256], q: f32[4,256]) -> (f32[4,256], f32[4,256], f32[4,256], f32[4,256]) {
  %x = bf16[4,256] parameter(0)
  %mean = f32[256] parameter(1)
  %p = f32[4,256] parameter(2)
  %q = f32[4,256] parameter(3)
  %wide = f32[4,256] convert(bf16[4,256] %x)
  %m = f32[4,256] broadcast(f32[256] %mean), dimensions={1}
  %centred = f32[4,256] subtract(f32[4,256] %wide, f32[4,256] %m)
  %a = f32[4,256] exponential(f32[4,256] %centred)
  %b = f32[4,256] multiply(f32[4,256] %centred, f32[4,256] %wide)
  %s = f32[4,256] add(f32[4,256] %p, f32[4,256] %q)
  %c = f32[4,256] log(f32[4,256] %s)
  %d = f32[4,256] negate(f32[4,256] %s)
  ROOT %t = (f32[4,256], f32[4,256], f32[4,256], f32[4,256]) tuple(%a, %b, %c, %d)
})",
                          &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  EXPECT_EQ(e.Find("centred"), nullptr);  // in both of its readers' fusions
  EXPECT_EQ(e.Find("wide"), nullptr);
  EXPECT_NE(e.Find("s"), nullptr);  // copies would read more than it holds
  const hlo::HloInstruction& root = *e.root();
  for (int k : {0, 1}) {
    const hlo::HloInstruction& f = *root.operand(k);
    ASSERT_EQ(f.opcode(), hlo::Opcode::kFusion);
    EXPECT_EQ(CountOps(*f.fused_computation(), hlo::Opcode::kConvert), 1);
    EXPECT_EQ(CountOps(*f.fused_computation(), hlo::Opcode::kSubtract), 1);
    EXPECT_EQ(f.operand_count(), 2u);  // x and mean: the copies read what they would have
  }
  EXPECT_EQ(root.operand(2)->opcode(), hlo::Opcode::kLog);  // groups of one stay
}

// JAX's batch norm widens x twice (one convert for the sums, one for x - mean): a convert read
// only by a copied producer is copied with it, so no f32 x is ever stored (ResNet-50 as flax
// writes it: docs/fidelity.md).
TEST(PassFusion, AConvertReadOnlyByACopiedProducerIsCopiedToo) {
  bool changed = false;
  hlo::HloModule m = Fuse(R"(HloModule t
ENTRY %e (x: bf16[4,256], mean: f32[256], g: f32[4,256]) -> (f32[4,256], f32[4,256]) {
  %x = bf16[4,256] parameter(0)
  %mean = f32[256] parameter(1)
  %g = f32[4,256] parameter(2)
  %wide = f32[4,256] convert(bf16[4,256] %x)
  %m = f32[4,256] broadcast(f32[256] %mean), dimensions={1}
  %centred = f32[4,256] subtract(f32[4,256] %wide, f32[4,256] %m)
  %a = f32[4,256] exponential(f32[4,256] %centred)
  %b = f32[4,256] multiply(f32[4,256] %centred, f32[4,256] %g)
  ROOT %t = (f32[4,256], f32[4,256]) tuple(%a, %b)
})",
                          &changed);
  EXPECT_TRUE(changed);
  const hlo::HloComputation& e = *m.entry();
  EXPECT_EQ(e.Find("wide"), nullptr);  // its one reader, centred, is copied: so is it
  EXPECT_EQ(e.Find("centred"), nullptr);
  for (int k : {0, 1}) {
    const hlo::HloInstruction& f = *e.root()->operand(k);
    ASSERT_EQ(f.opcode(), hlo::Opcode::kFusion);
    EXPECT_EQ(CountOps(*f.fused_computation(), hlo::Opcode::kConvert), 1);
    EXPECT_EQ(f.operand(0)->name(), "x");  // reads bf16 x, not a stored f32 copy
  }
}

// Per-feature sums (every dimension but the last) take their producers when the target's
// kernel computes the fusion (the feature-stream kernel: feature_fusion_kernel.h); without a
// target, or when the kernel declines (features that do not stream flat), they stay apart.
TEST(PassFusion, PerFeatureSumsTakeTheirProducersWhenTheTargetComputesThem) {
  const std::string text = R"(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e (x: bf16[2,4,4,FEATURES]) -> f32[FEATURES] {
  %x = bf16[2,4,4,FEATURES] parameter(0)
  %wide = f32[2,4,4,FEATURES] convert(bf16[2,4,4,FEATURES] %x)
  %sq = f32[2,4,4,FEATURES] multiply(f32[2,4,4,FEATURES] %wide, f32[2,4,4,FEATURES] %wide)
  %z = f32[] constant(0)
  ROOT %sum = f32[FEATURES] reduce(f32[2,4,4,FEATURES] %sq, f32[] %z), dimensions={0,1,2}, to_apply=%add
})";
  auto with = [&](const std::string& features) {
    std::string t = text;
    for (size_t at; (at = t.find("FEATURES")) != std::string::npos;) t.replace(at, 8, features);
    return t;
  };
  bool changed = false;
  hlo::HloModule fused = Fuse(with("128"), &changed, &lowering::TensorCoreTarget());
  EXPECT_TRUE(changed);
  const hlo::HloInstruction& root = *fused.entry()->root();
  ASSERT_EQ(root.opcode(), hlo::Opcode::kFusion);
  EXPECT_EQ(root.GetWord("kind"), "kInput");
  EXPECT_EQ(root.operand(0)->name(), "x");  // reads bf16 x, widening it per vreg
  EXPECT_EQ(CountOps(*root.fused_computation(), hlo::Opcode::kConvert), 1);
  // no target: the sum reads the fused square
  hlo::HloModule plain = Fuse(with("128"), &changed);
  EXPECT_EQ(plain.entry()->root()->opcode(), hlo::Opcode::kReduce);
  // 96 features neither divide a vreg's 1024 elements nor fill whole vregs: declined
  hlo::HloModule declined = Fuse(with("96"), &changed, &lowering::TensorCoreTarget());
  EXPECT_EQ(declined.entry()->root()->opcode(), hlo::Opcode::kReduce);
  EXPECT_EQ(declined.entry()->root()->operand(0)->opcode(), hlo::Opcode::kFusion);
  // a sum of a broadcast constant reads no matrix for the stream (difftest seed 209527 was
  // refused: "feature stream: out of bounds"): declined, the reduce keeps the broadcast
  hlo::HloModule constant = Fuse(R"(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e () -> f32[2048] {
  %c = f32[] constant(3)
  %b = f32[1,8,2,2048] broadcast(f32[] %c), dimensions={}
  %z = f32[] constant(0)
  ROOT %sum = f32[2048] reduce(f32[1,8,2,2048] %b, f32[] %z), dimensions={0,1,2}, to_apply=%add
})",
                                 &changed, &lowering::TensorCoreTarget());
  EXPECT_EQ(constant.entry()->root()->opcode(), hlo::Opcode::kReduce);
}

}  // namespace
}  // namespace tpusim::passes
