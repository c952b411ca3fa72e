// Parser: IR contents, exact error positions, unsupported ops, iota replica groups.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/hlo/parser.h"

namespace tpusim::hlo {
namespace {

std::string ParseError(const std::string& text) {
  Result<HloModule> m = ParseHlo(text, "m.hlo");
  return m.ok() ? "" : m.status().message();
}

TEST(Parser, ReadsHeaderShapesAndAttributes) {
  Result<HloModule> m = ParseHlo(
      "HloModule jit_f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}, replica_count=8, "
      "num_partitions=2, alias_passthrough_params=true\n"
      "ENTRY %main (p: f32[2]) -> f32[2] {\n"
      "  %p = f32[2]{0:T(128)S(1)} parameter(0), metadata={op_name=\"x\" source_line=42}\n"
      "  ROOT %c = f32[2]{0} constant({1.5, -inf})\n}\n",
      "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->name, "jit_f");
  EXPECT_EQ(m->replica_count, 8);
  EXPECT_EQ(m->num_partitions, 2);
  EXPECT_TRUE(m->alias_passthrough_params);
  EXPECT_EQ(m->entry_computation_layout, "(f32[2]{0})->f32[2]{0}");
  const HloInstruction* p = m->entry()->parameters().at(0);
  ASSERT_TRUE(p->shape().layout.has_value());
  EXPECT_EQ(p->shape().layout->memory_space, 1);
  EXPECT_EQ(p->shape().layout->tiles.at(0).dims, std::vector<int64_t>{128});
  EXPECT_EQ(*p->RawAttr("metadata"), "{op_name=\"x\" source_line=42}");
  const HloInstruction* c = m->entry()->root();
  EXPECT_EQ(c->literal().floats.at(0), 1.5);
  EXPECT_TRUE(std::isinf(c->literal().floats.at(1)));
  EXPECT_LT(p->id(), c->id());
}

TEST(Parser, ElidedConstant) {
  Result<HloModule> m =
      ParseHlo("HloModule m\nENTRY e {\n  ROOT c = f32[100,100] constant({...})\n}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->entry()->root()->literal().elided);
}

TEST(Parser, IotaReplicaGroupsExpand) {
  Result<HloModule> m = ParseHlo(
      "HloModule m, replica_count=8\nadd { a = f32[] parameter(0)  b = f32[] parameter(1)  "
      "ROOT s = f32[] add(a, b) }\nENTRY e {\n  p = f32[4] parameter(0)\n"
      "  x = f32[4] all-reduce(p), replica_groups=[2,4]<=[8], to_apply=add\n"
      "  ROOT y = f32[4] all-reduce(x), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=add\n}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const HloInstruction* y = m->entry()->root();
  using G = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(y->operand(0)->replica_groups()->groups, (G{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(y->replica_groups()->groups, (G{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(Parser, ConvolutionDimLabels) {
  Result<HloModule> m = ParseHlo(
      "HloModule m\nENTRY e {\n  i = f32[1,8,8,3] parameter(0)\n  k = f32[3,3,3,4] parameter(1)\n"
      "  ROOT c = f32[1,8,8,4] convolution(i, k), window={size=3x3 pad=1_1x1_1 "
      "rhs_dilate=1x1}, dim_labels=b01f_01io->b01f\n}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ConvDims* d = m->entry()->root()->conv_dims();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->input_feature, 3);
  EXPECT_EQ(d->kernel_output_feature, 3);
  EXPECT_EQ(d->input_spatial, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m->entry()->root()->window()->dims.at(1).pad_high, 1);
}

TEST(Parser, ErrorPositions) {
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                       "  ROOT a = f32[2] add(p, %q)\n}\n"),
            "m.hlo:4:26: undefined operand '%q'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                       "  ROOT r = f32[] reduce(p, p), dimensions={0}, to_apply=%nope\n}\n"),
            "m.hlo:4:48: undefined computation '%nope'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[2 parameter(0)\n}\n"),
            "m.hlo:3:13: expected ']' to end the dimensions");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[2] frobnicate(0)\n}\n"),
            "m.hlo:3:14: unknown opcode 'frobnicate'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  c = f32[3] constant({1, 2})\n}\n"),
            "m.hlo:3:23: constant has 2 values but shape f32[3] needs 3");
  EXPECT_EQ(ParseError(""),
            "m.hlo:1:1: unexpected end of input: expected 'HloModule' at the "
            "start of the module");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"),
            "m.hlo:2:1: computation %e is missing its '}'");
  // A byte count past 64 bits wrapped into the memory report ("Used 5.39E").
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[100000000000,100000000] "
                       "parameter(0)\n}\n"),
            "m.hlo:3:12: shape f32[100000000000,100000000] holds more than 2^50 bytes (1 PiB)");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  ROOT p = (s32[], bf16[1099511627776,1024]) "
                       "parameter(0)\n}\n"),
            "m.hlo:3:20: shape bf16[1099511627776,1024] holds more than 2^50 bytes (1 PiB)");
  // Found by the compiler fuzzer (stop 20): layout assignment read past the dimensions.
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[4,8]{1,5} parameter(0)\n}\n"),
            "m.hlo:3:20: layout's minor_to_major must name each of the shape's 2 dimensions "
            "once; 5 is out of range or repeated");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[4,8]{0,0} parameter(0)\n}\n"),
            "m.hlo:3:20: layout's minor_to_major must name each of the shape's 2 dimensions "
            "once; 0 is out of range or repeated");
}

TEST(Parser, UnsupportedOps) {
  EXPECT_EQ(
      ParseError("HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n"
                 "  ROOT c = f32[8] custom-call(p), custom_call_target=\"__cublas$gemm\"\n}\n"),
      "m.hlo:4:8: unsupported op 'custom-call' (target \"__cublas$gemm\") at line 4, "
      "column 8: tpusim reads only the sharding annotations (Sharding, "
      "SPMDFullToShardShape, SPMDShardToFullShape, xla.sdy.*); it has no model of custom "
      "kernels");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n"
                       "  ROOT c = f32[8] custom-call(p), custom_call_target=\"Sharding\", "
                       "sharding={replicated}\n}\n"),
            "");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  ROOT t = token[] after-all()\n}\n"),
            "m.hlo:3:12: unsupported element type 'token'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[<=8] parameter(0)\n}\n"),
            "m.hlo:3:16: dynamic shapes are not supported: TPU programs need static shapes; "
            "pad to a fixed size");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  ROOT p = f32[?] parameter(0)\n}\n"),
            "m.hlo:3:16: dynamic shapes are not supported: TPU programs need static shapes; "
            "pad to a fixed size");
}

TEST(Parser, NestingIsBounded) {
  std::string deep = "HloModule m\nENTRY e {\n  ROOT c = f32[1] constant(" + std::string(300, '{') +
                     "1" + std::string(300, '}') + ")\n}\n";
  EXPECT_NE(ParseError(deep).find("nesting deeper than 256 levels"), std::string::npos);
  std::string tuple = "HloModule m\nENTRY e {\n  ROOT p = " + std::string(300, '(') + "f32[]" +
                      std::string(300, ')') + " parameter(0)\n}\n";
  EXPECT_NE(ParseError(tuple).find("nesting deeper than 256 levels"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::hlo
