// conv-canonicalization: the HLO each rewrite produces, idempotence, the cases left alone,
// and every ResNet-50 kind of convolution evaluated before and after the rewrite.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/lowering/conv/conv_select.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "compiler/passes/conv_canon/conv_canon.h"
#include "compiler/passes/dce.h"
#include "test/compiler/passes/conv_canon_cases.h"

namespace tpusim::passes {
namespace {

using testing::ConvCase;
using testing::ConvCases;

const ConvCase& Case(const std::string& name) {
  for (const ConvCase& c : ConvCases())
    if (c.name == name) return c;
  throw std::out_of_range(name);
}

struct Rewritten {
  bool changed = false, changed_again = true;
  std::map<std::string, int> ops;  // opcode -> count in the entry
  std::vector<const hlo::HloInstruction*> convs;
  hlo::HloModule module;
};

// The tensor core, but for a weight-gradient kernel that reads neither padding nor window
// dilation (as tpusim's before stop 25): what the pass does for such a backend.
class UnpaddedWeightGradTarget : public target::TargetDescription {
 public:
  bool ExactConvolution(const hlo::HloInstruction& conv) const override {
    const hlo::ConvDims* cd = conv.conv_dims();
    if (cd && cd->labels == "f01b_i01o->01bf" && conv.window())
      for (const hlo::WindowDim& d : conv.window()->dims)
        if (d.pad_low || d.pad_high || d.rhs_dilate != 1) return false;
    return real_.ExactConvolution(conv);
  }
  bool ExactBatchNorm(const hlo::HloInstruction& bn) const override {
    return real_.ExactBatchNorm(bn);
  }
  bool ExactBatchNormFusion(const hlo::HloInstruction& f) const override {
    return real_.ExactBatchNormFusion(f);
  }
  bool ExactBf16Move(const hlo::HloInstruction& m) const override { return real_.ExactBf16Move(m); }
  bool ExactBf16Reads(const hlo::Shape& s) const override { return real_.ExactBf16Reads(s); }

 private:
  const target::TargetDescription& real_ = lowering::TensorCoreTarget();
};

// Parses `text`, runs the pass (then dce, as the pipeline does), verifies, runs it again.
Rewritten Canonicalize(const std::string& text,
                       const target::TargetDescription& target = lowering::TensorCoreTarget()) {
  Rewritten r;
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  r.module = std::move(*m);
  hlo::Result<bool> first = ConvCanonicalizationPass(target).Run(r.module);
  EXPECT_TRUE(first.ok()) << first.status().message();
  r.changed = first.ok() && *first;
  EXPECT_TRUE(DcePass().Run(r.module).ok());
  hlo::Status v = hlo::VerifyModule(r.module);
  EXPECT_TRUE(v.ok()) << v.message() << "\n" << hlo::PrintModule(r.module);
  hlo::Result<bool> second = ConvCanonicalizationPass(target).Run(r.module);
  EXPECT_TRUE(second.ok());
  r.changed_again = !second.ok() || *second;
  for (const auto& i : r.module.entry()->instructions()) {
    ++r.ops[std::string(hlo::GetOpcodeInfo(i->opcode()).name)];
    if (i->opcode() == hlo::Opcode::kConvolution) r.convs.push_back(i.get());
  }
  return r;
}

std::string Line(const hlo::HloInstruction* i) { return hlo::PrintInstruction(*i); }

TEST(PassConvCanon, WeightGradPaddingIsReadInPlace) {  // the kernel takes it as it is
  Rewritten r = Canonicalize(Case("WgradThreeByThreePadOne").Module());
  EXPECT_FALSE(r.changed);
  ASSERT_EQ(r.convs.size(), 1u);
  EXPECT_TRUE(lowering::OnExactConvKernel(*r.convs[0]));
}

TEST(PassConvCanon, WeightGradPaddingBecomesAnExplicitPad) {
  Rewritten r = Canonicalize(Case("WgradThreeByThreePadOne").Module(), UnpaddedWeightGradTarget());
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(r.changed_again);
  ASSERT_EQ(r.convs.size(), 1u);
  const hlo::HloInstruction* conv = r.convs[0];
  EXPECT_EQ(conv->window()->dims[0], (hlo::WindowDim{.size = 8}));
  EXPECT_EQ(conv->window()->dims[1], (hlo::WindowDim{.size = 8}));
  EXPECT_EQ(Line(conv->operand(0)),
            "%c.pad = f32[2,10,10,16] pad(f32[2,8,8,16] %x, f32[] %c.zero), "
            "padding=0_0x1_1x1_1x0_0");
  EXPECT_TRUE(lowering::OnExactConvKernel(*conv));
  EXPECT_EQ(r.ops["pad"], 1);
  EXPECT_EQ(r.ops["add"], 0);
}

TEST(PassConvCanon, WeightGradStrideTwoSplitsIntoFourPhases) {
  Rewritten r =
      Canonicalize(Case("WgradThreeByThreeStrideTwoSame").Module(), UnpaddedWeightGradTarget());
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(r.changed_again);
  ASSERT_EQ(r.convs.size(), 4u);  // phases (0,0) 2x2 taps, (0,1) 2x1, (1,0) 1x2, (1,1) 1x1
  EXPECT_EQ(r.convs[0]->shape().dims, (std::vector<int64_t>{2, 2, 16, 6}));
  EXPECT_EQ(r.convs[3]->shape().dims, (std::vector<int64_t>{1, 1, 16, 6}));
  for (const hlo::HloInstruction* c : r.convs) {
    EXPECT_TRUE(lowering::OnExactConvKernel(*c)) << Line(c);
    EXPECT_EQ(c->window()->dims[0].rhs_dilate, 1);
  }
  // Phase (0,0) reads X[2i] for i < 5: rows 0..8 of X padded by 0_1.
  EXPECT_EQ(Line(r.convs[0]->operand(0)),
            "%c.pad = f32[2,5,5,16] pad(f32[2,4,4,16] %c.slice, f32[] %c.zero), "
            "padding=0_0x0_1x0_1x0_0");
  EXPECT_EQ(Line(r.convs[0]->operand(0)->operand(0)),
            "%c.slice = f32[2,4,4,16] slice(f32[2,8,8,16] %x), "
            "slice={[0:2], [0:7:2], [0:7:2], [0:16]}");
  EXPECT_EQ(r.ops["slice"], 4);
  EXPECT_EQ(r.ops["add"], 3);
  EXPECT_EQ(r.ops["pad"], 3 + 4);  // three phase images leave X; four placements
}

TEST(PassConvCanon, WeightGradOneByOneStrideTwoIsOneStridedSlice) {
  Rewritten r = Canonicalize(Case("WgradOneByOneStrideTwo").Module());
  EXPECT_TRUE(r.changed);
  ASSERT_EQ(r.convs.size(), 1u);
  EXPECT_EQ(Line(r.convs[0]->operand(0)),
            "%c.slice = f32[2,4,4,16] slice(f32[2,8,8,16] %x), "
            "slice={[0:2], [0:7:2], [0:7:2], [0:16]}");
  EXPECT_EQ(r.module.entry()->root(), r.convs[0]);
  EXPECT_EQ(r.ops["pad"], 0);
}

// A bf16 weight gradient (JAX's bf16 ResNet-50) runs on the f32 kernel, its padding read in
// place, and is rounded once by a convert: the MXU accumulates in f32.
TEST(PassConvCanon, WeightGradWithABf16ResultAccumulatesInF32) {
  Rewritten r = Canonicalize(Case("WgradBf16ResultPadOne").Module());
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(r.changed_again);
  ASSERT_EQ(r.convs.size(), 1u);
  EXPECT_EQ(r.convs[0]->name(), "c.wide");
  EXPECT_EQ(r.convs[0]->shape().type, hlo::PrimitiveType::kF32);
  EXPECT_EQ(r.convs[0]->window()->dims[0].pad_low, 1);
  EXPECT_TRUE(lowering::OnExactConvKernel(*r.convs[0]));
  EXPECT_EQ(Line(r.module.entry()->root()),
            "%c.convert = bf16[3,3,16,64] convert(f32[3,3,16,64] %c.wide)");
  EXPECT_EQ(r.ops["pad"], 0);
}

// Split into phases, the phases' f32 gradients are added before the one rounding.
TEST(PassConvCanon, Bf16WeightGradPhasesAddInF32) {
  Rewritten r =
      Canonicalize(Case("WgradBf16ResultStrideTwoSame").Module(), UnpaddedWeightGradTarget());
  EXPECT_TRUE(r.changed);
  ASSERT_EQ(r.convs.size(), 4u);
  for (const hlo::HloInstruction* c : r.convs) EXPECT_EQ(c->shape().type, hlo::PrimitiveType::kF32);
  const hlo::HloInstruction* root = r.module.entry()->root();
  EXPECT_EQ(root->opcode(), hlo::Opcode::kConvert);
  EXPECT_EQ(root->operand(0)->opcode(), hlo::Opcode::kAdd);
  EXPECT_EQ(r.ops["convert"], 1);
}

TEST(PassConvCanon, WeightGradOfFewInputChannelsRunsAsWritten) {
  // The RGB stem: the kernel folds 49 taps x 3 channels into the MXU's columns and reads
  // the padding and the window dilation itself, so nothing is rewritten.
  Rewritten r = Canonicalize(
      "HloModule m\nENTRY %e (x: f32[2,16,16,3], d: f32[2,8,8,6]) -> f32[7,7,3,6] {\n"
      "  %x = f32[2,16,16,3] parameter(0)\n  %d = f32[2,8,8,6] parameter(1)\n"
      "  ROOT %c = f32[7,7,3,6] convolution(%x, %d), window={size=8x8 pad=2_3x2_3 "
      "rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf\n}\n");
  EXPECT_FALSE(r.changed);
  ASSERT_EQ(r.convs.size(), 1u);
  EXPECT_TRUE(lowering::OnExactConvKernel(*r.convs[0]));
}

TEST(PassConvCanon, InputGradOneByOneStrideTwoIsOnePadInterior) {
  Rewritten r = Canonicalize(Case("DgradOneByOneStrideTwo").Module());
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(r.changed_again);
  ASSERT_EQ(r.convs.size(), 1u);  // odd phases see no tap: they stay zero
  EXPECT_EQ(r.convs[0]->window()->dims[0], (hlo::WindowDim{.size = 1}));
  EXPECT_EQ(Line(r.module.entry()->root()),
            "%c.pad = f32[2,8,8,5] pad(f32[2,4,4,5] %c.phase, f32[] %c.zero), "
            "padding=0_0_0x0_1_1x0_1_1x0_0_0");
}

TEST(PassConvCanon, InputGradStrideTwoStacksFourPhases) {
  Rewritten r = Canonicalize(Case("DgradThreeByThreeStrideTwoSame").Module());
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(r.changed_again);
  ASSERT_EQ(r.convs.size(), 4u);
  // Phase (0,0): taps 0 and 2 of each dimension, dY padded 1_0 in the window.
  EXPECT_EQ(r.convs[0]->window()->dims[0], (hlo::WindowDim{.size = 2, .pad_low = 1}));
  EXPECT_EQ(r.convs[0]->operand(1)->shape().dims, (std::vector<int64_t>{2, 2, 5, 18}));
  EXPECT_EQ(r.convs[3]->operand(1)->shape().dims, (std::vector<int64_t>{1, 1, 5, 18}));
  // Phases (0,1) and (1,0) pad one dimension only: dY is padded explicitly.
  EXPECT_EQ(r.convs[1]->operand(0)->opcode(), hlo::Opcode::kPad);
  EXPECT_EQ(r.ops["concatenate"], 3);
  EXPECT_EQ(r.ops["add"], 0);
  EXPECT_EQ(Line(r.module.entry()->root()).substr(0, 45),
            "%c.bitcast.4 = f32[2,8,8,5] bitcast(f32[2,4,2");
  for (const hlo::HloInstruction* c : r.convs) EXPECT_TRUE(lowering::OnExactConvKernel(*c));
}

TEST(PassConvCanon, InputGradOfOddSizeAddsPlacedPhases) {
  Rewritten r = Canonicalize(Case("DgradThreeByThreeStrideTwoPadOne").Module());
  EXPECT_TRUE(r.changed);
  ASSERT_EQ(r.convs.size(), 4u);  // phases of 5 and 4 positions: padded into place
  EXPECT_EQ(r.ops["concatenate"], 0);
  EXPECT_EQ(r.ops["add"], 3);
}

TEST(PassConvCanon, DataMovementKeepsItsOperandsBf16Type) {
  // A bf16 model's input gradient: bf16 operands, f32 result. The sub-kernel slices and the
  // pads are bf16 (the verifier checks each), only the convolutions produce f32.
  Rewritten r = Canonicalize(
      "HloModule m\nENTRY %e (d: bf16[2,4,4,18], k: bf16[3,3,5,18]) -> f32[2,8,8,5] {\n"
      "  %d = bf16[2,4,4,18] parameter(0)\n  %k = bf16[3,3,5,18] parameter(1)\n"
      "  ROOT %c = f32[2,8,8,5] convolution(%d, %k), window={size=3x3 pad=2_1x2_1 "
      "lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f\n}\n");
  EXPECT_TRUE(r.changed);
  int moves = 0;
  for (const auto& i : r.module.entry()->instructions()) {
    if (i->opcode() != hlo::Opcode::kSlice && i->opcode() != hlo::Opcode::kPad) continue;
    ++moves;
    EXPECT_EQ(i->shape().type, i->operand(0)->shape().type) << Line(i.get());
  }
  EXPECT_GT(moves, 0);
}

TEST(PassConvCanon, ExactConvolutionsAreLeftAlone) {
  for (const char* text :
       {"HloModule m\nENTRY %e (x: f32[2,9,9,8], k: f32[3,3,8,8]) -> f32[2,9,9,8] {\n"
        "  %x = f32[2,9,9,8] parameter(0)\n  %k = f32[3,3,8,8] parameter(1)\n"
        "  ROOT %c = f32[2,9,9,8] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, "
        "dim_labels=b01f_01io->b01f\n}\n",
        "HloModule m\nENTRY %e (x: f32[2,9,9,8], d: f32[2,7,7,8]) -> f32[3,3,8,8] {\n"
        "  %x = f32[2,9,9,8] parameter(0)\n  %d = f32[2,7,7,8] parameter(1)\n"
        "  ROOT %c = f32[3,3,8,8] convolution(%x, %d), window={size=7x7}, "
        "dim_labels=f01b_i01o->01bf\n}\n"}) {
    Rewritten r = Canonicalize(text);
    EXPECT_FALSE(r.changed);
  }
}

// A 3x3 convolution dilated 3 x 2 over 11 x 10 positions (outputs 5 x 6): 3 x 2 phases,
// each an undilated 3x3 convolution of a strided slice of X computing 2 x 3 outputs (one
// row past the 5 in y), stacked by concatenates and a bitcast, the extra row sliced off.
TEST(PassConvCanon, DilatedConvolutionIsOneUndilatedConvolutionPerPhase) {
  Rewritten r = Canonicalize(Case("AtrousDilationsThreeAndTwoValid").Module());
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(r.changed_again);
  ASSERT_EQ(r.convs.size(), 6u);
  for (const hlo::HloInstruction* c : r.convs) {
    EXPECT_EQ(c->shape().dims, (std::vector<int64_t>{2, 2, 3, 8})) << Line(c);
    for (const hlo::WindowDim& w : c->window()->dims) {
      EXPECT_EQ(w.rhs_dilate, 1) << Line(c);
      EXPECT_EQ(w.size, 3) << Line(c);
    }
  }
  EXPECT_EQ(Line(r.convs[1]->operand(0)),
            "%c.slice.1 = f32[2,4,5,16] slice(f32[2,11,10,16] %x), slice={[0:2], [0:11:3], "
            "[1:10:2], [0:16]}");
  EXPECT_EQ(r.ops["concatenate"], 4);  // three rows of two, then the rows
  EXPECT_EQ(Line(r.module.entry()->root()),
            "%c.slice.6 = f32[2,5,6,8] slice(f32[2,6,6,8] %c.bitcast.6), "
            "slice={[0:2], [0:5], [0:6], [0:8]}");
}

// Depthwise over 144 channels: two chunks of 72, each a dense convolution whose kernel
// [3, 3, 72, 72] is the chunk's taps expanded block-diagonally by data movement alone.
TEST(PassConvCanon, DepthwiseIsDenseConvolutionsOfExpandedChunks) {
  Rewritten r = Canonicalize(Case("DepthwiseStrideTwo144Channels").Module());
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(r.changed_again);
  ASSERT_EQ(r.convs.size(), 2u);
  for (const hlo::HloInstruction* c : r.convs) {
    EXPECT_EQ(c->operand(1)->shape().dims, (std::vector<int64_t>{3, 3, 72, 72})) << Line(c);
    EXPECT_FALSE(c->GetInt("feature_group_count").has_value()) << Line(c);
  }
  EXPECT_EQ(r.ops["pad"], 2);
  EXPECT_EQ(r.ops["concatenate"], 1);
  EXPECT_EQ(r.ops["multiply"] + r.ops["select"] + r.ops["iota"], 0);  // no mask arithmetic
}

// A depthwise layer's weight gradient by 16 batch groups: one dense weight gradient of the
// 16 channels (its padding rewritten away first: a pad of X), its block diagonal extracted.
TEST(PassConvCanon, DepthwiseWeightGradIsTheDiagonalOfADenseOne) {
  Rewritten r = Canonicalize(Case("DepthwiseWeightGradPadOne").Module());
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(r.changed_again);
  ASSERT_EQ(r.convs.size(), 1u);
  EXPECT_EQ(r.convs[0]->shape().dims, (std::vector<int64_t>{3, 3, 16, 32})) << Line(r.convs[0]);
  EXPECT_FALSE(r.convs[0]->GetInt("batch_group_count").has_value());
  EXPECT_EQ(r.module.entry()->root()->shape().dims, (std::vector<int64_t>{3, 3, 1, 32}));
}

TEST(PassConvCanon, FormsWithoutAnExactRewriteAreLeftAlone) {
  // Two feature groups in NCHW layout, and a strided forward convolution with window
  // dilation: no rewrite.
  Rewritten groups = Canonicalize(
      "HloModule m\nENTRY %e (x: f32[2,8,8,8], k: f32[8,4,3,3]) -> f32[2,8,8,8] {\n"
      "  %x = f32[2,8,8,8] parameter(0)\n  %k = f32[8,4,3,3] parameter(1)\n"
      "  ROOT %c = f32[2,8,8,8] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, "
      "dim_labels=bf01_oi01->bf01, feature_group_count=2\n}\n");
  EXPECT_FALSE(groups.changed);
  Rewritten dilated = Canonicalize(
      "HloModule m\nENTRY %e (x: f32[2,8,8,8], k: f32[3,3,8,8]) -> f32[2,2,2,8] {\n"
      "  %x = f32[2,8,8,8] parameter(0)\n  %k = f32[3,3,8,8] parameter(1)\n"
      "  ROOT %c = f32[2,2,2,8] convolution(%x, %k), window={size=3x3 stride=2x2 rhs_dilate=2x2}, "
      "dim_labels=b01f_01io->b01f\n}\n");
  EXPECT_FALSE(dilated.changed);
}

// The rewritten module computes what the original does (the evaluator rounds the same
// operands; only the f32 summation order differs). Weight gradients are rewritten for a
// kernel without padding or dilation (the tensor core's reads both in place).
class ConvCanonEquivalence : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvCanonEquivalence, EvaluatorAgrees) {
  const std::string text = GetParam().Module();
  hlo::Result<hlo::HloModule> original = hlo::ParseHlo(text);
  ASSERT_TRUE(original.ok());
  Rewritten r = Canonicalize(text, UnpaddedWeightGradTarget());
  ASSERT_TRUE(r.changed);
  for (const hlo::HloInstruction* c : r.convs) EXPECT_TRUE(lowering::OnExactConvKernel(*c));
  std::vector<eval::Value> args;
  for (const hlo::HloInstruction* p : original->entry()->parameters())
    args.push_back(eval::Value::Random(p->shape(), 7 + p->parameter_number()));
  auto want = eval::Evaluate(*original, args);
  auto got = eval::Evaluate(r.module, args);
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(want->at(0).data.size(), got->at(0).data.size());
  double scale = 0, error = 0;
  for (size_t k = 0; k < want->at(0).data.size(); ++k) {
    scale = std::max(scale, std::abs(want->at(0).data[k]));
    error = std::max(error, std::abs(want->at(0).data[k] - got->at(0).data[k]));
  }
  EXPECT_GT(scale, 0.5);
  // a bf16 result may round the other way after another summation order: one bf16 ulp
  const bool bf16 = original->entry()->root()->shape().type == hlo::PrimitiveType::kBF16;
  EXPECT_LT(error, (bf16 ? 1.0 / 128 : 1e-5) * scale);
}

INSTANTIATE_TEST_SUITE_P(ResNet50Kinds, ConvCanonEquivalence, ::testing::ValuesIn(ConvCases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace tpusim::passes
