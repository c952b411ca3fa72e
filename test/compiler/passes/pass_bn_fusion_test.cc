// batch-norm-fusion, IR in and IR out: a batch-norm-training whose normalized output
// feeds one elementwise consumer becomes a multi-output fusion where the kernel takes it.
#include "compiler/passes/fusion/bn_fusion.h"

#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/fusion/fusion.h"
#include "test/compiler/values/batch_norm_modules.h"

namespace tpusim::passes {
namespace {

// The module after elementwise fusion, this pass and dce, printed; `changed` says whether
// this pass changed it.
std::string Fuse(const std::string& text, bool* changed = nullptr) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(ElementwiseFusionPass().Run(*m).ok());
  hlo::Result<bool> r = BatchNormFusionPass(lowering::TensorCoreTarget()).Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (changed) *changed = r.ok() && *r;
  EXPECT_TRUE(DcePass().Run(*m).ok());
  EXPECT_TRUE(hlo::VerifyModule(*m).ok()) << hlo::VerifyModule(*m).message();
  return hlo::PrintModule(*m);
}

// The entry computation's text (after the fused computations).
std::string Entry(const std::string& printed) { return printed.substr(printed.find("ENTRY")); }

// ResNet's layer: batch norm over a bf16 convolution output, then ReLU.
constexpr const char* kBatchNormRelu = R"(HloModule m
ENTRY %main (x: bf16[8,8,8,64], g: f32[64], b: f32[64]) -> (bf16[8,8,8,64], f32[64], f32[64]) {
  %x = bf16[8,8,8,64] parameter(0)
  %g = f32[64] parameter(1)
  %b = f32[64] parameter(2)
  %bn = (bf16[8,8,8,64], f32[64], f32[64]) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=3
  %y = bf16[8,8,8,64] get-tuple-element(%bn), index=0
  %mean = f32[64] get-tuple-element(%bn), index=1
  %var = f32[64] get-tuple-element(%bn), index=2
  %zero = bf16[] constant(0)
  %zeros = bf16[8,8,8,64] broadcast(%zero), dimensions={}
  %relu = bf16[8,8,8,64] maximum(%y, %zeros)
  ROOT %t = (bf16[8,8,8,64], f32[64], f32[64]) tuple(%relu, %mean, %var)
})";

TEST(PassBatchNormFusion, ReluFusesIntoTheNormalizingPass) {
  bool changed = false;
  const std::string out = Fuse(kBatchNormRelu, &changed);
  EXPECT_TRUE(changed);
  const std::string entry = Entry(out);
  // One fusion takes x, gamma and beta and returns (relu, mean, var); the results keep the
  // names of the values they replace (elementwise fusion named the ReLU's fusion %fusion).
  EXPECT_NE(entry.find("%fusion.1 = (bf16[8,8,8,64], f32[64], f32[64]) fusion(bf16[8,8,8,64] %x, "
                       "f32[64] %g, f32[64] %b), kind=kOutput, calls=%fused_batch_norm"),
            std::string::npos)
      << out;
  EXPECT_NE(entry.find("%fusion = bf16[8,8,8,64] get-tuple-element("), std::string::npos) << out;
  EXPECT_NE(entry.find("%mean = f32[64] get-tuple-element("), std::string::npos) << out;
  EXPECT_EQ(entry.find("batch-norm-training"), std::string::npos) << out;
  EXPECT_EQ(entry.find("maximum"), std::string::npos) << out;
  // Inside: the batch norm, its normalized output into the ReLU, the statistics out.
  const std::string fused = out.substr(0, out.find("ENTRY"));
  EXPECT_NE(fused.find("batch-norm-training(bf16[8,8,8,64] %param_0, f32[64] %param_1, "
                       "f32[64] %param_2)"),
            std::string::npos)
      << out;
  EXPECT_NE(fused.find("maximum(bf16[8,8,8,64] %normalized"), std::string::npos) << out;
  EXPECT_NE(fused.find("ROOT %tuple = (bf16[8,8,8,64], f32[64], f32[64]) tuple("),
            std::string::npos)
      << out;
}

// The projection block's end: relu(bn(a) + bn(b)). One batch norm takes the add and ReLU
// and reads the other's output as its second stream; the other stays a batch norm.
TEST(PassBatchNormFusion, TwoBatchNormsIntoOneAddFuseOnce) {
  const std::string out = Fuse(R"(HloModule m
ENTRY %main (a: f32[4,4,4,256], b: f32[4,4,4,256], g: f32[256], o: f32[256]) -> f32[4,4,4,256] {
  %a = f32[4,4,4,256] parameter(0)
  %b = f32[4,4,4,256] parameter(1)
  %g = f32[256] parameter(2)
  %o = f32[256] parameter(3)
  %bn1 = (f32[4,4,4,256], f32[256], f32[256]) batch-norm-training(%a, %g, %o), epsilon=0.001, feature_index=3
  %y1 = f32[4,4,4,256] get-tuple-element(%bn1), index=0
  %bn2 = (f32[4,4,4,256], f32[256], f32[256]) batch-norm-training(%b, %g, %o), epsilon=0.001, feature_index=3
  %y2 = f32[4,4,4,256] get-tuple-element(%bn2), index=0
  %sum = f32[4,4,4,256] add(%y1, %y2)
  %zero = f32[] constant(0)
  %zeros = f32[4,4,4,256] broadcast(%zero), dimensions={}
  ROOT %relu = f32[4,4,4,256] maximum(%sum, %zeros)
})");
  const std::string entry = Entry(out);
  size_t fusions = 0;
  for (size_t at = entry.find("kind=kOutput"); at != std::string::npos;
       at = entry.find("kind=kOutput", at + 1))
    ++fusions;
  EXPECT_EQ(fusions, 1u) << out;
  EXPECT_NE(entry.find("batch-norm-training("), std::string::npos) << out;
  EXPECT_NE(entry.find("fusion(f32[4,4,4,256] %a, f32[256] %g, f32[256] %o, f32[4,4,4,256] %y2)"),
            std::string::npos)
      << out;
  EXPECT_NE(entry.find("ROOT %fusion = f32[4,4,4,256] get-tuple-element("), std::string::npos)
      << out;
}

// ReLU's gradient feeding batch-norm-grad: the select moves into a kInput fusion whose
// root is the gradient; a producer read twice stays out.
TEST(PassBatchNormFusion, ReluGradientFusesIntoBatchNormGrad) {
  const std::string module = R"(HloModule m
ENTRY %main (x: bf16[8,8,8,64], g: f32[64], mean: f32[64], var: f32[64], y: bf16[8,8,8,64], gr: bf16[8,8,8,64]) -> (bf16[8,8,8,64], f32[64], f32[64]) {
  %x = bf16[8,8,8,64] parameter(0)
  %g = f32[64] parameter(1)
  %mean = f32[64] parameter(2)
  %var = f32[64] parameter(3)
  %y = bf16[8,8,8,64] parameter(4)
  %gr = bf16[8,8,8,64] parameter(5)
  %zero = bf16[] constant(0)
  %zeros = bf16[8,8,8,64] broadcast(%zero), dimensions={}
  %pos = pred[8,8,8,64] compare(%y, %zeros), direction=GT
  %dy = bf16[8,8,8,64] select(%pos, %gr, %zeros)
  %bn = (bf16[8,8,8,64], f32[64], f32[64]) batch-norm-grad(%x, %g, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = bf16[8,8,8,64] get-tuple-element(%bn), index=0
  %dg = f32[64] get-tuple-element(%bn), index=1
  ROOT %t = (bf16[8,8,8,64], f32[64], f32[64]) tuple(%dx, %dg, USE)
})";
  std::string once = module;
  once.replace(once.find("USE"), 3, "%dg");
  bool changed = false;
  const std::string out = Fuse(once, &changed);
  EXPECT_TRUE(changed);
  const std::string entry = Entry(out);
  EXPECT_NE(entry.find("fusion(bf16[8,8,8,64] %x, f32[64] %g, f32[64] %mean, f32[64] %var, "
                       "bf16[8,8,8,64] %y, bf16[8,8,8,64] %gr), kind=kInput, "
                       "calls=%fused_batch_norm_grad"),
            std::string::npos)
      << out;
  EXPECT_EQ(entry.find("select("), std::string::npos) << out;
  EXPECT_EQ(entry.find("batch-norm-grad("), std::string::npos) << out;
  const std::string fused = out.substr(0, out.find("ENTRY"));
  EXPECT_NE(fused.find("ROOT %bn = (bf16[8,8,8,64], f32[64], f32[64]) batch-norm-grad("),
            std::string::npos)
      << out;

  // dy also returned (at a residual junction, the skip path reads it): the fusion computes
  // it once and writes it as a fourth result, which the other readers take under dy's name.
  std::string twice = module;
  twice.replace(twice.find("USE"), 3, "%dg");
  twice.replace(twice.find("tuple(%dx, %dg, %dg)"), 20, "tuple(%dx, %dg, %dy)");
  twice.replace(twice.find("-> (bf16[8,8,8,64], f32[64], f32[64])"), 37,
                "-> (bf16[8,8,8,64], f32[64], bf16[8,8,8,64])");
  twice.replace(twice.find("ROOT %t = (bf16[8,8,8,64], f32[64], f32[64])"), 44,
                "ROOT %t = (bf16[8,8,8,64], f32[64], bf16[8,8,8,64])");
  changed = false;
  const std::string shared = Fuse(twice, &changed);
  EXPECT_TRUE(changed) << shared;
  const std::string shared_entry = Entry(shared);
  EXPECT_NE(shared_entry.find("(bf16[8,8,8,64], f32[64], f32[64], bf16[8,8,8,64]) fusion("),
            std::string::npos)
      << shared;
  // (elementwise fusion made dy the loop fusion %fusion first)
  EXPECT_NE(shared_entry.find("%fusion = bf16[8,8,8,64] get-tuple-element((bf16[8,8,8,64], "
                              "f32[64], f32[64], bf16[8,8,8,64]) %fusion.1), index=3"),
            std::string::npos)
      << shared;
  EXPECT_EQ(shared_entry.find("select("), std::string::npos) << shared;
  const std::string shared_fused = shared.substr(0, shared.find("ENTRY"));
  EXPECT_NE(shared_fused.find("ROOT %tuple = (bf16[8,8,8,64], f32[64], f32[64], bf16[8,8,8,64]) "
                              "tuple(bf16[8,8,8,64] %dx, f32[64] %dgamma, f32[64] %dbeta, "
                              "bf16[8,8,8,64] %dy)"),
            std::string::npos)
      << shared;
}

// A layer forward and backward: the ReLU of a training batch norm is read by the next layer
// and by its own gradient's mask. The gradient fusion recomputes the normalize and ReLU from
// x (a batch-norm-inference of the training's operands and statistics, beta a new operand)
// instead of reading the ReLU; a residual junction's ReLU, which also reads the shortcut,
// is read as before.
constexpr const char* kForwardAndBackward = R"(HloModule m
ENTRY %main (x: bf16[8,8,8,64], g: f32[64], b: f32[64], r: bf16[8,8,8,64], gr: bf16[8,8,8,64]) -> (bf16[8,8,8,64], bf16[8,8,8,64], f32[64]) {
  %x = bf16[8,8,8,64] parameter(0)
  %g = f32[64] parameter(1)
  %b = f32[64] parameter(2)
  %r = bf16[8,8,8,64] parameter(3)
  %gr = bf16[8,8,8,64] parameter(4)
  %bn = (bf16[8,8,8,64], f32[64], f32[64]) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=3
  %y = bf16[8,8,8,64] get-tuple-element(%bn), index=0
  %mean = f32[64] get-tuple-element(%bn), index=1
  %var = f32[64] get-tuple-element(%bn), index=2
  %zero = bf16[] constant(0)
  %zeros = bf16[8,8,8,64] broadcast(%zero), dimensions={}
  %relu = bf16[8,8,8,64] maximum(SUM, %zeros)
  %pos = pred[8,8,8,64] compare(%relu, %zeros), direction=GT
  %dy = bf16[8,8,8,64] select(%pos, %gr, %zeros)
  %bg = (bf16[8,8,8,64], f32[64], f32[64]) batch-norm-grad(%x, %g, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = bf16[8,8,8,64] get-tuple-element(%bg), index=0
  %dg = f32[64] get-tuple-element(%bg), index=1
  ROOT %t = (bf16[8,8,8,64], bf16[8,8,8,64], f32[64]) tuple(%relu, %dx, %dg)
})";

TEST(PassBatchNormFusion, ReluOfTheTrainingPassIsRecomputedInItsGradient) {
  std::string plain = kForwardAndBackward;
  plain.replace(plain.find("SUM"), 3, "%y");
  const std::string out = Fuse(plain);
  const std::string entry = Entry(out);
  EXPECT_NE(entry.find("fusion(bf16[8,8,8,64] %x, f32[64] %g, f32[64] %mean, f32[64] %var, "
                       "f32[64] %b, bf16[8,8,8,64] %gr), kind=kInput, "
                       "calls=%fused_batch_norm_grad"),
            std::string::npos)
      << out;
  const std::string fused = out.substr(0, out.find("ENTRY"));
  EXPECT_NE(fused.find("%normalized = bf16[8,8,8,64] batch-norm-inference(bf16[8,8,8,64] "
                       "%param_0, f32[64] %param_1, f32[64] %param_4, f32[64] %param_2, "
                       "f32[64] %param_3), epsilon=0.001, feature_index=3"),
            std::string::npos)
      << out;

  std::string junction = kForwardAndBackward;
  junction.replace(junction.find("SUM"), 3, "%sum");
  junction.replace(junction.find("  %relu"), 0, "  %sum = bf16[8,8,8,64] add(%y, %r)\n");
  const std::string kept = Fuse(junction);
  EXPECT_NE(Entry(kept).find("kind=kInput, calls=%fused_batch_norm_grad"), std::string::npos)
      << kept;
  EXPECT_EQ(kept.find("batch-norm-inference"), std::string::npos) << kept;
}

// A batch norm whose x depends on another reader of its dy is left alone: that reader would
// wait for the fusion, which would wait for x.
TEST(PassBatchNormFusion, SharedGradientIsNotFusedIntoItsOwnDependency) {
  bool changed = true;
  const std::string out = Fuse(R"(HloModule m
ENTRY %main (g: f32[64], mean: f32[64], var: f32[64], y: bf16[8,8,8,64], gr: bf16[8,8,8,64]) -> (bf16[8,8,8,64], f32[64], f32[64]) {
  %g = f32[64] parameter(0)
  %mean = f32[64] parameter(1)
  %var = f32[64] parameter(2)
  %y = bf16[8,8,8,64] parameter(3)
  %gr = bf16[8,8,8,64] parameter(4)
  %zero = bf16[] constant(0)
  %zeros = bf16[8,8,8,64] broadcast(%zero), dimensions={}
  %pos = pred[8,8,8,64] compare(%y, %zeros), direction=GT
  %dy = bf16[8,8,8,64] select(%pos, %gr, %zeros)
  %x = bf16[8,8,8,64] negate(%dy)
  %bn = (bf16[8,8,8,64], f32[64], f32[64]) batch-norm-grad(%x, %g, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = bf16[8,8,8,64] get-tuple-element(%bn), index=0
  %dg = f32[64] get-tuple-element(%bn), index=1
  %db = f32[64] get-tuple-element(%bn), index=2
  ROOT %t = (bf16[8,8,8,64], f32[64], f32[64]) tuple(%dx, %dg, %db)
})",
                               &changed);
  EXPECT_FALSE(changed) << out;
}

// Found by varying difftest seed 221290: y + the gradient its statistics feed (ReLU of y
// added to dx) was fused into the normalizing pass, a cycle through the gradient.
TEST(PassBatchNormFusion, AConsumerThatReadsTheGradientOfItsStatisticsStaysOut) {
  bool changed = true;
  const std::string out = Fuse(tpusim::testing::kReluOfYAddedToItsGradient, &changed);
  EXPECT_FALSE(changed) << out;
  EXPECT_NE(out.find("batch-norm-training("), std::string::npos) << out;
}

TEST(PassBatchNormFusion, LeavesWhatTheKernelDoesNotTake) {
  // 200 features do not stream flat; a normalized output read twice would be computed
  // twice; a statistic read by the consumer is not elementwise with it.
  for (const char* text : {R"(HloModule m
ENTRY %main (x: f32[8,200], g: f32[200], b: f32[200]) -> f32[8,200] {
  %x = f32[8,200] parameter(0)
  %g = f32[200] parameter(1)
  %b = f32[200] parameter(2)
  %bn = (f32[8,200], f32[200], f32[200]) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=1
  %y = f32[8,200] get-tuple-element(%bn), index=0
  ROOT %n = f32[8,200] negate(%y)
})",
                           R"(HloModule m
ENTRY %main (x: f32[8,128], g: f32[128], b: f32[128]) -> (f32[8,128], f32[8,128]) {
  %x = f32[8,128] parameter(0)
  %g = f32[128] parameter(1)
  %b = f32[128] parameter(2)
  %bn = (f32[8,128], f32[128], f32[128]) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=1
  %y = f32[8,128] get-tuple-element(%bn), index=0
  %n = f32[8,128] negate(%y)
  ROOT %t = (f32[8,128], f32[8,128]) tuple(%n, %y)
})",
                           R"(HloModule m
ENTRY %main (x: f32[8,128], g: f32[128], b: f32[128]) -> f32[8,128] {
  %x = f32[8,128] parameter(0)
  %g = f32[128] parameter(1)
  %b = f32[128] parameter(2)
  %bn = (f32[8,128], f32[128], f32[128]) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=1
  %y = f32[8,128] get-tuple-element(%bn), index=0
  %mean = f32[128] get-tuple-element(%bn), index=1
  %m = f32[8,128] broadcast(%mean), dimensions={1}
  ROOT %d = f32[8,128] subtract(%y, %m)
})"}) {
    bool changed = true;
    const std::string out = Fuse(text, &changed);
    EXPECT_FALSE(changed) << out;
    EXPECT_EQ(out.find("kOutput"), std::string::npos) << out;
    EXPECT_EQ(out.find("fused_batch_norm"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace tpusim::passes
