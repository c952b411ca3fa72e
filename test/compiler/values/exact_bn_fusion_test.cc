// batch-norm-fusion (passes/fusion/bn_fusion.h) with values: batch-norm-training and the
// elementwise consumer of its normalized output run as one flat kernel (the consumer computed
// in the normalizing pass); each module is simulated on v3-8 and compared with the evaluator
// on the unfused module.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "test/compiler/values/batch_norm_modules.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;

// The module compiles to `fusion` (a batch-norm fusion's kind and computation); then its
// values match the evaluator's.
void ExpectFusedMatch(const std::string& hlo, double tolerance = 1e-5,
                      const std::string& fusion = "kind=kOutput, calls=%fused_batch_norm") {
  auto c = CompileForBoard(hlo, "test.hlo",
                           driver::TargetFor(sim::LoadConfig("v3-8"), /*infeed=*/false));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_NE(c.value()->report.hlo.find(fusion), std::string::npos) << c.value()->report.hlo;
  ExpectMatch(hlo, tolerance);
}

// The same for a batch-norm-grad fusion.
void ExpectFusedGradMatch(const std::string& hlo) {
  ExpectFusedMatch(hlo, 1e-5, "kind=kInput, calls=%fused_batch_norm_grad");
}

// ResNet's layer in bf16: 64 features (16 rows of features per vreg), ReLU.
TEST(ExactBatchNormFusion, Bf16Relu) {
  ExpectFusedMatch(testing::Bf16BatchNormRelu("8,8,8,64", "64"));
}

// A bottleneck block's end in bf16: relu(bn(x) + shortcut), 2,048 features (period 2).
// The kernel's f32 normalize and the evaluator's double one round a few elements of the
// bf16 batch-norm output to neighbouring values; the add carries that ulp of |y| into the
// sum, so the bound is one bf16 ulp (2^-8) of the largest |reference|, as the unfused
// program measures (`tpusim run`: 2.6e-3 unfused, 2.7e-3 fused).
TEST(ExactBatchNormFusion, Bf16ResidualAddAndRelu) {
  ExpectFusedMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[4,2,2,2048], r: bf16[4,2,2,2048], g: f32[2048], b: f32[2048]) -> (bf16[4,2,2,2048], f32[2048]) {
  %x = bf16[4,2,2,2048]{3,2,1,0} parameter(0)
  %r = bf16[4,2,2,2048]{3,2,1,0} parameter(1)
  %g = f32[2048]{0} parameter(2)
  %b = f32[2048]{0} parameter(3)
  %xw = f32[4,2,2,2048]{3,2,1,0} convert(%x)
  %bn = (f32[4,2,2,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}) batch-norm-training(%xw, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[4,2,2,2048]{3,2,1,0} get-tuple-element(%bn), index=0
  %var = f32[2048]{0} get-tuple-element(%bn), index=2
  %y16 = bf16[4,2,2,2048]{3,2,1,0} convert(%y)
  %sum = bf16[4,2,2,2048]{3,2,1,0} add(%y16, %r)
  %zero = bf16[] constant(0)
  %zeros = bf16[4,2,2,2048]{3,2,1,0} broadcast(%zero), dimensions={}
  %relu = bf16[4,2,2,2048]{3,2,1,0} maximum(%sum, %zeros)
  ROOT %t = (bf16[4,2,2,2048]{3,2,1,0}, f32[2048]{0}) tuple(%relu, %var)
})",
                   1.0 / 256);
}

// A projection block's end in f32: relu(bn(a) + bn(b)); one batch norm takes the add.
TEST(ExactBatchNormFusion, TwoBatchNormsIntoOneAdd) {
  ExpectFusedMatch(R"(HloModule m, replica_count=8
ENTRY %main (a: f32[4,4,4,256], b: f32[4,4,4,256], g: f32[256], o: f32[256]) -> f32[4,4,4,256] {
  %a = f32[4,4,4,256]{3,2,1,0} parameter(0)
  %b = f32[4,4,4,256]{3,2,1,0} parameter(1)
  %g = f32[256]{0} parameter(2)
  %o = f32[256]{0} parameter(3)
  %bn1 = (f32[4,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}) batch-norm-training(%a, %g, %o), epsilon=0.001, feature_index=3
  %y1 = f32[4,4,4,256]{3,2,1,0} get-tuple-element(%bn1), index=0
  %bn2 = (f32[4,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}) batch-norm-training(%b, %g, %o), epsilon=0.001, feature_index=3
  %y2 = f32[4,4,4,256]{3,2,1,0} get-tuple-element(%bn2), index=0
  %sum = f32[4,4,4,256]{3,2,1,0} add(%y1, %y2)
  %zero = f32[] constant(0)
  %zeros = f32[4,4,4,256]{3,2,1,0} broadcast(%zero), dimensions={}
  ROOT %relu = f32[4,4,4,256]{3,2,1,0} maximum(%sum, %zeros)
})");
}

// ReLU's gradient fused into batch-norm-grad (kind=kInput): dy = select(y > 0, g, 0) is
// computed in both passes from y and g, bf16, 64 features.
const char* kBf16ReluGradient = R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[8,8,8,64], g: f32[64], mean: f32[64], var0: f32[64], y: bf16[8,8,8,64], gr: bf16[8,8,8,64]) -> (bf16[8,8,8,64], f32[64], f32[64]) {
  %x = bf16[8,8,8,64]{3,2,1,0} parameter(0)
  %g = f32[64]{0} parameter(1)
  %mean = f32[64]{0} parameter(2)
  %var0 = f32[64]{0} parameter(3)
  %one = f32[] constant(1)
  %ones = f32[64]{0} broadcast(%one), dimensions={}
  %var = f32[64]{0} add(%var0, %ones)
  %y = bf16[8,8,8,64]{3,2,1,0} parameter(4)
  %gr = bf16[8,8,8,64]{3,2,1,0} parameter(5)
  %zero = bf16[] constant(0)
  %zeros = bf16[8,8,8,64]{3,2,1,0} broadcast(%zero), dimensions={}
  %pos = pred[8,8,8,64]{3,2,1,0} compare(%y, %zeros), direction=GT
  %dy = bf16[8,8,8,64]{3,2,1,0} select(%pos, %gr, %zeros)
  %bn = (bf16[8,8,8,64]{3,2,1,0}, f32[64]{0}, f32[64]{0}) batch-norm-grad(%x, %g, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = bf16[8,8,8,64]{3,2,1,0} get-tuple-element(%bn), index=0
  %dg = f32[64]{0} get-tuple-element(%bn), index=1
  %db = f32[64]{0} get-tuple-element(%bn), index=2
  ROOT %t = (bf16[8,8,8,64]{3,2,1,0}, f32[64]{0}, f32[64]{0}) tuple(%dx, %dg, %db)
})";

TEST(ExactBatchNormFusion, Bf16ReluGradientIntoBatchNormGrad) {
  ExpectFusedGradMatch(kBf16ReluGradient);
}

// The same with 2,048 features (period 2) in f32, dy = g * (y > 0) written as a multiply of
// a converted mask: any elementwise producer of at most two matrices.
TEST(ExactBatchNormFusion, F32ProducerOfTwoMatricesIntoBatchNormGrad) {
  ExpectFusedGradMatch(R"(HloModule m, replica_count=8
ENTRY %main (x: f32[4,2,2,2048], g: f32[2048], mean: f32[2048], var0: f32[2048], y: f32[4,2,2,2048], gr: f32[4,2,2,2048]) -> (f32[4,2,2,2048], f32[2048], f32[2048]) {
  %x = f32[4,2,2,2048]{3,2,1,0} parameter(0)
  %g = f32[2048]{0} parameter(1)
  %mean = f32[2048]{0} parameter(2)
  %var0 = f32[2048]{0} parameter(3)
  %one = f32[] constant(1)
  %ones = f32[2048]{0} broadcast(%one), dimensions={}
  %var = f32[2048]{0} add(%var0, %ones)
  %y = f32[4,2,2,2048]{3,2,1,0} parameter(4)
  %gr = f32[4,2,2,2048]{3,2,1,0} parameter(5)
  %zero = f32[] constant(0)
  %zeros = f32[4,2,2,2048]{3,2,1,0} broadcast(%zero), dimensions={}
  %pos = pred[4,2,2,2048]{3,2,1,0} compare(%y, %zeros), direction=GT
  %mask = f32[4,2,2,2048]{3,2,1,0} convert(%pos)
  %dy = f32[4,2,2,2048]{3,2,1,0} multiply(%gr, %mask)
  %bn = (f32[4,2,2,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}) batch-norm-grad(%x, %g, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = f32[4,2,2,2048]{3,2,1,0} get-tuple-element(%bn), index=0
  %dg = f32[2048]{0} get-tuple-element(%bn), index=1
  %db = f32[2048]{0} get-tuple-element(%bn), index=2
  ROOT %t = (f32[4,2,2,2048]{3,2,1,0}, f32[2048]{0}, f32[2048]{0}) tuple(%dx, %dg, %db)
})");
}

// A residual junction's gradient in bf16, 256 features: dy = select(y > 0, g1 + g2, 0) (three
// matrices) is also the skip path's gradient (`%skip` reads it), so the fusion writes dy as a
// fourth result while its statistics pass computes it, and the dx pass reads it back.
TEST(ExactBatchNormFusion, Bf16JunctionGradientWithAnotherReader) {
  const std::string hlo = R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[8,4,4,256], g: f32[256], mean: f32[256], var0: f32[256], y: bf16[8,4,4,256], g1: bf16[8,4,4,256], g2: bf16[8,4,4,256]) -> (bf16[8,4,4,256], f32[256], f32[256], bf16[8,4,4,256]) {
  %x = bf16[8,4,4,256]{3,2,1,0} parameter(0)
  %g = f32[256]{0} parameter(1)
  %mean = f32[256]{0} parameter(2)
  %var0 = f32[256]{0} parameter(3)
  %one = f32[] constant(1)
  %ones = f32[256]{0} broadcast(%one), dimensions={}
  %var = f32[256]{0} add(%var0, %ones)
  %y = bf16[8,4,4,256]{3,2,1,0} parameter(4)
  %g1 = bf16[8,4,4,256]{3,2,1,0} parameter(5)
  %g2 = bf16[8,4,4,256]{3,2,1,0} parameter(6)
  %zero = bf16[] constant(0)
  %zeros = bf16[8,4,4,256]{3,2,1,0} broadcast(%zero), dimensions={}
  %pos = pred[8,4,4,256]{3,2,1,0} compare(%y, %zeros), direction=GT
  %sum = bf16[8,4,4,256]{3,2,1,0} add(%g1, %g2)
  %dy = bf16[8,4,4,256]{3,2,1,0} select(%pos, %sum, %zeros)
  %bn = (bf16[8,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}) batch-norm-grad(%x, %g, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = bf16[8,4,4,256]{3,2,1,0} get-tuple-element(%bn), index=0
  %dg = f32[256]{0} get-tuple-element(%bn), index=1
  %db = f32[256]{0} get-tuple-element(%bn), index=2
  %skip = bf16[8,4,4,256]{3,2,1,0} negate(%dy)
  ROOT %t = (bf16[8,4,4,256]{3,2,1,0}, f32[256]{0}, f32[256]{0}, bf16[8,4,4,256]{3,2,1,0}) tuple(%dx, %dg, %db, %skip)
})";
  auto c = CompileForBoard(hlo, "test.hlo",
                           driver::TargetFor(sim::LoadConfig("v3-8"), /*infeed=*/false));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const std::string& ir = c.value()->report.hlo;
  EXPECT_NE(ir.find("bf16[8,4,4,256]{3,2,1,0:T(4,128)(2,1)}) fusion("), std::string::npos) << ir;
  EXPECT_NE(ir.find("kind=kInput, calls=%fused_batch_norm_grad"), std::string::npos) << ir;
  EXPECT_NE(ir.find("get-tuple-element("), std::string::npos) << ir;
  EXPECT_EQ(ir.find(" batch-norm-grad(bf16"), ir.rfind(" batch-norm-grad(bf16")) << ir;
  ExpectMatch(hlo, 1e-5);
}

// A layer's forward and backward: relu(bn(x)) also feeds the next layer (returned), and its
// gradient select(relu > 0, g, 0) feeds the batch norm's gradient. The normalize is
// duplicated into the gradient, which recomputes relu's mask from the x it reads anyway
// instead of reading relu back: its fusion takes no bf16 matrix but x and g.
std::string ForwardAndBackward(const std::string& type, const std::string& dims,
                               const std::string& features) {
  std::string hlo = R"(HloModule m, replica_count=8
ENTRY %main (x: T[D], gamma: f32[F], beta: f32[F], gr: T[D]) -> (T[D], T[D], f32[F], f32[F]) {
  %x = T[D] parameter(0)
  %gamma = f32[F]{0} parameter(1)
  %beta = f32[F]{0} parameter(2)
  %gr = T[D] parameter(3)
  %bn = (T[D], f32[F]{0}, f32[F]{0}) batch-norm-training(%x, %gamma, %beta), epsilon=0.001, feature_index=3
  %y = T[D] get-tuple-element(%bn), index=0
  %mean = f32[F]{0} get-tuple-element(%bn), index=1
  %var = f32[F]{0} get-tuple-element(%bn), index=2
  %zero = T[] constant(0)
  %zeros = T[D] broadcast(%zero), dimensions={}
  %relu = T[D] maximum(%y, %zeros)
  %pos = pred[D] compare(%relu, %zeros), direction=GT
  %dy = T[D] select(%pos, %gr, %zeros)
  %bg = (T[D], f32[F]{0}, f32[F]{0}) batch-norm-grad(%x, %gamma, %mean, %var, %dy), epsilon=0.001, feature_index=3
  %dx = T[D] get-tuple-element(%bg), index=0
  %dg = f32[F]{0} get-tuple-element(%bg), index=1
  %db = f32[F]{0} get-tuple-element(%bg), index=2
  ROOT %t = (T[D], T[D], f32[F]{0}, f32[F]{0}) tuple(%relu, %dx, %dg, %db)
})";
  for (const auto& [key, value] :
       {std::pair<std::string, std::string>{"T[D]", type + "[" + dims + "]{3,2,1,0}"},
        {"pred[D]", "pred[" + dims + "]{3,2,1,0}"},
        {"T[]", type + "[]"},
        {"[F]", "[" + features + "]"}})
    for (size_t at = hlo.find(key); at != std::string::npos; at = hlo.find(key, at + value.size()))
      hlo.replace(at, key.size(), value);
  return hlo;
}

void ExpectNormalizeDuplicated(const std::string& hlo) {
  auto c = CompileForBoard(hlo, "test.hlo",
                           driver::TargetFor(sim::LoadConfig("v3-8"), /*infeed=*/false));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const std::string& ir = c.value()->report.hlo;
  const size_t grad = ir.find("%fused_batch_norm_grad");
  ASSERT_NE(grad, std::string::npos) << ir;
  const std::string fused = ir.substr(grad, ir.find("\n}", grad) - grad);
  EXPECT_NE(fused.find("batch-norm-inference("), std::string::npos) << ir;
  EXPECT_EQ(fused.find("parameter(6)"), std::string::npos) << ir;  // x, 3 vectors, beta, g
  ExpectMatch(hlo, 1e-5);
}

TEST(ExactBatchNormFusion, Bf16NormalizeDuplicatedIntoTheReluGradient) {
  ExpectNormalizeDuplicated(ForwardAndBackward("bf16", "8,8,8,64", "64"));
}

// f32 with 2,048 features (period 2): the dx pass's patterns take beta as a sixth.
TEST(ExactBatchNormFusion, F32NormalizeDuplicatedIntoTheReluGradient) {
  ExpectNormalizeDuplicated(ForwardAndBackward("f32", "4,2,2,2048", "2048"));
}

// Gradients whose dbeta nothing reads (difftest found both kernels declining them, so the
// module ran timing-only): the flat kernel stores only the statistics someone reads. Fused
// (a bf16 ReLU gradient), and with dy also read by another op (neither statistic read).
// `text` with each (from, to) replaced once.
std::string Replaced(std::string text,
                     const std::vector<std::pair<std::string, std::string>>& edits) {
  for (const auto& [from, to] : edits) text.replace(text.find(from), from.size(), to);
  return text;
}

// kBf16ReluGradient without dbeta among the results.
const std::string kUnreadDbeta =
    Replaced(kBf16ReluGradient,
             {{"-> (bf16[8,8,8,64], f32[64], f32[64])", "-> (bf16[8,8,8,64], f32[64])"},
              {"  %db = f32[64]{0} get-tuple-element(%bn), index=2\n", ""},
              {"ROOT %t = (bf16[8,8,8,64]{3,2,1,0}, f32[64]{0}, f32[64]{0}) tuple(%dx, %dg, %db)",
               "ROOT %t = (bf16[8,8,8,64]{3,2,1,0}, f32[64]{0}) tuple(%dx, %dg)"}});

TEST(ExactBatchNormFusion, GradientWhoseDbetaNothingReads) { ExpectFusedGradMatch(kUnreadDbeta); }

TEST(ExactBatchNormFusion, GradientWhoseStatisticsNothingReads) {
  const std::string shared = Replaced(
      kUnreadDbeta,
      {{"-> (bf16[8,8,8,64], f32[64])", "-> (bf16[8,8,8,64], bf16[8,8,8,64])"},
       {"%dg = f32[64]{0} get-tuple-element(%bn), index=1\n",
        "%skip = bf16[8,8,8,64]{3,2,1,0} negate(%dy)\n"},
       {"ROOT %t = (bf16[8,8,8,64]{3,2,1,0}, f32[64]{0}) tuple(%dx, %dg)",
        "ROOT %t = (bf16[8,8,8,64]{3,2,1,0}, bf16[8,8,8,64]{3,2,1,0}) tuple(%dx, %skip)"}});
  ExpectMatch(shared, 1e-5);  // neither dgamma nor dbeta read
}

// y's ReLU added to the gradient its statistics feed: it stays a loop fusion.
TEST(ExactBatchNormFusion, ReluOfYAddedToItsOwnGradient) {
  ExpectMatch(testing::kReluOfYAddedToItsGradient, 1e-5);
}

}  // namespace
}  // namespace tpusim
