// Shape verifier: accepted modules and the messages for broken ones.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"

namespace tpusim::hlo {
namespace {

// Parses `body` as the ENTRY computation of a module with an %add reducer and verifies it.
std::string VerifyError(const std::string& body, const std::string& header = "") {
  std::string text = "HloModule t" + header +
                     "\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
                     "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n}\n"
                     "ENTRY %e {\n" +
                     body + "\n}\n";
  Result<HloModule> m = ParseHlo(text, "t.hlo");
  if (!m.ok()) return "PARSE: " + m.status().message();
  Status s = VerifyModule(*m);
  return s.ok() ? "" : s.message();
}

TEST(Verifier, OptBarrierAndDeviceIndexShapes) {
  EXPECT_EQ(VerifyError("%x = f32[4] parameter(0)\n%t = (f32[4]) tuple(%x)\n"
                        "ROOT %b = (f32[4]) opt-barrier(%t)"),
            "");
  EXPECT_EQ(VerifyError("%x = f32[4] parameter(0)\nROOT %b = f32[8] opt-barrier(%x)"),
            "%b: result shape is f32[8] but should be f32[4]");
  EXPECT_EQ(VerifyError("ROOT %id = u32[] replica-id()"), "");
  EXPECT_EQ(VerifyError("ROOT %id = s32[] partition-id()"),
            "%id: result shape is s32[] but should be u32[]");
}

TEST(Verifier, AsyncPairsNeedTheirStartAndItsShape) {
  EXPECT_EQ(VerifyError("%x = f32[8] parameter(0)\nROOT %d = f32[8] all-reduce-done(%x)"),
            "%d: operand must be a all-reduce-start, not %x");
  EXPECT_EQ(VerifyError("%y = f32[8] parameter(0)\n"
                        "ROOT %s = (f32[8], f32[32]) all-gather-start(%y), dimensions={0}, "
                        "replica_groups={{0,1,2,3}}"),
            "");
  EXPECT_EQ(VerifyError("%y = f32[8] parameter(0)\n"
                        "ROOT %s = (f32[8], f32[16]) all-gather-start(%y), dimensions={0}, "
                        "replica_groups={{0,1,2,3}}"),
            "%s: result shape is (f32[8], f32[16]) but should be (f32[8], f32[32][, u32[]...])");
}

TEST(Verifier, DotContractingSizeMismatch) {
  EXPECT_EQ(VerifyError("%x = f32[8,64] parameter(0)\n%y = f32[128,32] parameter(1)\n"
                        "ROOT %dot.3 = f32[8,32] dot(%x, %y), lhs_contracting_dims={1}, "
                        "rhs_contracting_dims={0}"),
            "%dot.3: lhs contracting dimension 1 has size 64 but rhs contracting dimension 0 "
            "has size 128");
}

TEST(Verifier, DotGeneralBatchDims) {
  EXPECT_EQ(VerifyError("%x = f32[4,8,64] parameter(0)\n%y = f32[4,64,32] parameter(1)\n"
                        "ROOT %d = f32[4,8,32] dot(%x, %y), lhs_batch_dims={0}, "
                        "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"),
            "");
  EXPECT_EQ(VerifyError("%x = f32[4,8,64] parameter(0)\n%y = f32[4,64,32] parameter(1)\n"
                        "ROOT %d = f32[4,8,8] dot(%x, %y), lhs_batch_dims={0}, "
                        "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"),
            "%d: result shape is f32[4,8,8] but should be f32[4,8,32]");
}

TEST(Verifier, GatherOffsetDimensionsAreTheSliceSizes) {  // an embedding lookup
  const std::string ops = "%w = f32[100,16] parameter(0)\n%ids = s32[4,8] parameter(1)\n";
  const std::string attrs =
      "offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, "
      "index_vector_dim=2, slice_sizes=";
  EXPECT_EQ(VerifyError(ops + "ROOT %g = f32[4,8,16] gather(%w, %ids), " + attrs + "{1,16}"), "");
  EXPECT_EQ(VerifyError(ops + "ROOT %g = f32[4,8,16] gather(%w, %ids), " + attrs + "{1,8}"),
            "%g: result dimension 2 is 16 but slice_sizes[1] is 8");
  EXPECT_EQ(VerifyError(ops + "ROOT %g = f32[4,8,17] gather(%w, %ids), " + attrs + "{1,17}"),
            "%g: slice_sizes[1] = 17 exceeds the operand's dimension 16");
}

// Gather and scatter dimension lists in range and without repeats: pipeline_fuzz (stop 34)
// found a take_along_axis gather with operand_batching_dims={5} on a rank-2 operand, which
// the counts above let through and the partitioner's gather rule read past its tile counts.
TEST(Verifier, GatherAndScatterDimensionsAreInRange) {
  const std::string ops = "%x = f32[1024,10] parameter(0)\n%i = s32[1024,1,1] parameter(1)\n";
  const std::string gather =
      "ROOT %g = f32[1024,1] gather(%x, %i), offset_dims={}, collapsed_slice_dims={1}, "
      "start_index_map={1}, start_indices_batching_dims={0}, index_vector_dim=2, "
      "slice_sizes={1,1}, operand_batching_dims=";
  EXPECT_EQ(VerifyError(ops + gather + "{0}"), "");  // take_along_axis as JAX writes it
  EXPECT_EQ(VerifyError(ops + gather + "{5}"),
            "%g: collapsed or batching dimension 5 is out of range for rank 2");
  EXPECT_EQ(VerifyError(ops + gather + "{1}"),
            "%g: collapsed or batching dimension 1 appears twice");
  EXPECT_EQ(VerifyError(ops + "ROOT %g = f32[1024,1] gather(%x, %i), offset_dims={}, "
                              "collapsed_slice_dims={1}, start_index_map={3}, "
                              "start_indices_batching_dims={0}, index_vector_dim=2, "
                              "slice_sizes={1,1}, operand_batching_dims={0}"),
            "%g: start_index_map dimension 3 is out of range for rank 2");
  EXPECT_EQ(VerifyError("%t = f32[8,4] parameter(0)\n%i = s32[2,1] parameter(1)\n"
                        "%u = f32[2,4] parameter(2)\n"
                        "ROOT %s = f32[8,4] scatter(%t, %i, %u), update_window_dims={1}, "
                        "inserted_window_dims={7}, scatter_dims_to_operand_dims={0}, "
                        "index_vector_dim=1, to_apply=%add"),
            "%s: inserted or batching dimension 7 is out of range for rank 2");
}

TEST(Verifier, ElementwiseNeedsSameShapes) {
  EXPECT_EQ(VerifyError("%x = f32[2,3] parameter(0)\n%y = f32[3] parameter(1)\n"
                        "ROOT %s = f32[2,3] add(%x, %y)"),
            "%s: operand shapes f32[2,3] and f32[3] differ (HLO has no implicit broadcasting; "
            "use broadcast)");
  EXPECT_EQ(VerifyError("%x = f32[2] parameter(0)\n%y = s32[2] parameter(1)\n"
                        "ROOT %s = f32[2] multiply(%x, %y)"),
            "%s: operand element types f32 and s32 differ");
}

// erf, is-finite and round-nearest-afz take real floating-point operands, as in XLA's shape
// inference; is-finite yields pred.
TEST(Verifier, ErfIsFiniteAndRoundNearestAfzNeedFloatingOperands) {
  EXPECT_EQ(VerifyError("%x = bf16[2,3] parameter(0)\n%e = bf16[2,3] erf(%x)\n"
                        "%r = bf16[2,3] round-nearest-afz(%x)\n"
                        "ROOT %f = pred[2,3] is-finite(%e)"),
            "");
  EXPECT_EQ(VerifyError("%n = s32[4] parameter(0)\nROOT %f = pred[4] is-finite(%n)"),
            "%f: is-finite needs a floating-point operand, not s32[4]");
  EXPECT_EQ(VerifyError("%n = s32[4] parameter(0)\nROOT %e = s32[4] erf(%n)"),
            "%e: erf needs a floating-point operand, not s32[4]");
  EXPECT_EQ(VerifyError("%n = pred[4] parameter(0)\nROOT %r = pred[4] round-nearest-afz(%n)"),
            "%r: round-nearest-afz needs a floating-point operand, not pred[4]");
  EXPECT_EQ(VerifyError("%x = f32[4] parameter(0)\nROOT %f = f32[4] is-finite(%x)"),
            "%f: result shape is f32[4] but should be pred[4]");
}

TEST(Verifier, RoundingAndTranscendentalOpsNeedFloatingOperands) {
  // XLA rejects these on integers: floor(s32) is not an identity it accepts.
  EXPECT_EQ(VerifyError("%n = s32[4] parameter(0)\nROOT %f = s32[4] floor(%n)"),
            "%f: floor needs a floating-point operand, not s32[4]");
  EXPECT_EQ(VerifyError("%n = s32[4] parameter(0)\nROOT %r = s32[4] round-nearest-even(%n)"),
            "%r: round-nearest-even needs a floating-point operand, not s32[4]");
  EXPECT_EQ(VerifyError("%n = s32[4] parameter(0)\nROOT %e = s32[4] exponential(%n)"),
            "%e: exponential needs a floating-point or complex operand, not s32[4]");
  EXPECT_EQ(VerifyError("%p = pred[4] parameter(0)\nROOT %t = pred[4] tanh(%p)"),
            "%t: tanh needs a floating-point or complex operand, not pred[4]");
  EXPECT_EQ(VerifyError("%x = bf16[4] parameter(0)\n%c = bf16[4] ceil(%x)\n"
                        "ROOT %s = bf16[4] sqrt(%c)"),
            "");
}

TEST(Verifier, OperandCountFromTable) {
  EXPECT_EQ(VerifyError("%x = f32[2] parameter(0)\nROOT %n = f32[2] add(%x)"),
            "%n: add takes 2 operands but has 1");
}

TEST(Verifier, BroadcastReshapeTransposeSlicePad) {
  EXPECT_EQ(VerifyError("%x = f32[3] parameter(0)\nROOT %b = f32[2,4] broadcast(%x), "
                        "dimensions={1}"),
            "%b: operand dimension 0 of size 3 maps to result dimension 1 of size 4");
  EXPECT_EQ(VerifyError("%x = f32[2,3] parameter(0)\nROOT %r = f32[7] reshape(%x)"),
            "%r: result f32[7] has 7 elements but the operand f32[2,3] has 6");
  EXPECT_EQ(VerifyError("%x = f32[2,3] parameter(0)\nROOT %t = f32[2,3] transpose(%x), "
                        "dimensions={1,0}"),
            "%t: result shape is f32[2,3] but should be f32[3,2]");
  EXPECT_EQ(VerifyError("%x = f32[4] parameter(0)\nROOT %s = f32[2] slice(%x), slice={[2:6]}"),
            "%s: slice [2:6:1] is invalid for dimension 0 of size 4");
  EXPECT_EQ(VerifyError("%x = f32[4] parameter(0)\n%z = f32[] constant(0)\n"
                        "ROOT %p = f32[13] pad(%x, %z), padding=1_2_2"),
            "");
}

TEST(Verifier, ConvolutionWindowAndGroups) {
  const std::string ok =
      "%i = f32[1,8,8,6] parameter(0)\n%k = f32[3,3,3,12] parameter(1)\n"
      "ROOT %c = f32[1,8,8,12] convolution(%i, %k), window={size=3x3 pad=1_1x1_1}, "
      "dim_labels=b01f_01io->b01f, feature_group_count=2";
  EXPECT_EQ(VerifyError(ok), "");
  EXPECT_EQ(VerifyError("%i = f32[1,8,8,6] parameter(0)\n%k = f32[3,3,6,12] parameter(1)\n"
                        "ROOT %c = f32[1,8,8,12] convolution(%i, %k), window={size=3x3 "
                        "pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2"),
            "%c: input feature dimension has size 6 but kernel input feature size 6 x "
            "feature_group_count 2 is 12");
  EXPECT_EQ(VerifyError("%i = f32[1,8,8,6] parameter(0)\n%k = f32[3,3,6,12] parameter(1)\n"
                        "ROOT %c = f32[1,8,8,12] convolution(%i, %k), window={size=3x3}, "
                        "dim_labels=b01f_01io->b01f"),
            "%c: result shape is f32[1,8,8,12] but should be f32[1,6,6,12]");
}

TEST(Verifier, ReduceAndCollectives) {
  EXPECT_EQ(VerifyError("%x = f32[4,5] parameter(0)\n%z = f32[] constant(0)\n"
                        "ROOT %r = f32[5] reduce(%x, %z), dimensions={1}, to_apply=%add"),
            "%r: result shape is f32[5] but should be f32[4]");
  EXPECT_EQ(VerifyError("%x = f32[16] parameter(0)\nROOT %g = f32[64] all-gather(%x), "
                        "replica_groups=[2,4]<=[8], dimensions={0}",
                        ", replica_count=8"),
            "");
  EXPECT_EQ(VerifyError("%x = f32[16] parameter(0)\nROOT %a = f32[16] all-reduce(%x), "
                        "replica_groups={{0,1},{2,9}}, to_apply=%add",
                        ", replica_count=8"),
            "%a: replica id 9 is beyond the module's 8 devices");
}

// An array all-to-all splits one dimension of its operand over the group: a dimension past
// the rank was read out of bounds by the lowering (pipeline_fuzz, stop 30).
TEST(Verifier, AllToAllSplitsADimensionItHas) {
  EXPECT_EQ(VerifyError("%x = f32[64,128] parameter(0)\nROOT %a = f32[64,128] all-to-all(%x), "
                        "replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}",
                        ", replica_count=8"),
            "");
  EXPECT_THAT(VerifyError("%x = f32[64,128] parameter(0)\nROOT %a = f32[64,128] all-to-all(%x), "
                          "replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={5}",
                          ", replica_count=8"),
              ::testing::StartsWith("%a: dimension 5"));
  EXPECT_EQ(VerifyError("%x = f32[12,128] parameter(0)\nROOT %a = f32[12,128] all-to-all(%x), "
                        "replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}",
                        ", replica_count=8"),
            "%a: dimension size 12 is not divisible by the group size 8");
}

TEST(Verifier, WhileSignature) {
  EXPECT_EQ(VerifyError("%x = f32[] parameter(0)\nROOT %w = f32[] while(%x), condition=%add, "
                        "body=%add"),
            "%w: condition %add takes 2 parameters but is given 1");
}

TEST(Verifier, TupleAndGetTupleElement) {
  EXPECT_EQ(VerifyError("%x = f32[2] parameter(0)\n%t = (f32[2], f32[2]) tuple(%x, %x)\n"
                        "ROOT %g = f32[2] get-tuple-element(%t), index=2"),
            "%g: index must be within the tuple's 2 elements");
}

}  // namespace
}  // namespace tpusim::hlo
